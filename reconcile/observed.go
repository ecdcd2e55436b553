package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	rlookup "github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/observed"
)

// MaxObservedPasses bounds a chain of re-renders driven by observed
// values: a pass ending with a value its render used already changed
// (the render must run again) is unsettled, and this many unsettled
// passes in a row, under the same inputs, stall the parent with reason
// Flapping (two members feeding each other's values would otherwise
// loop for ever). It is below the flapping rule's writes of one member
// (applyset.FlapDetector), so a loop of observed values is named as one.
const MaxObservedPasses = 4

// observer gives a pass's render the observed values of the set's own
// members (templates' observed and stencil.dev/wait-for) and decides,
// after the apply, whether the values it used moved (settle). It is
// built per pass from the reconciler.
//
// The values are read from the controller's cache, and only of members
// of this set that stencil applied: the object a render names by id is
// one of its own rendered objects (never a non-member), and its live
// object must carry the set's part-of label and fields of the field
// manager applyset.FieldManager. The writer (the parent's
// ServiceAccount) applied that object and its apply response held the
// whole object, a Secret's data included: the cache shows templates
// nothing the writer could not read itself.
type observer struct{ *CompositionReconciler }

// given returns the observed values a pass's first render gets: those of
// the members the last render read (under the same inputs), read now;
// and the answers to the lookups it made, as the parent's identity may
// read them now.
func (r observer) given(ctx context.Context, s *scope, bundleRevision string) (map[string]map[string]any, lookup.Table, *recall.Observed) {
	last, _ := r.observed.Get(client.ObjectKeyFromObject(s.comp), inputKey(s.comp, bundleRevision))
	if last == nil {
		return nil, nil, nil
	}
	var table lookup.Table
	if len(last.Lookups) > 0 {
		// Authorized now, as every answer a render gets (an account that
		// lost its access gets empty answers, not what its last render
		// was given). An error leaves the render to ask.
		table, _, _ = r.lookups.Answers(ctx, r.lookupParent(s), r.identity(s), last.Lookups)
	}
	return r.values(ctx, r.watches.Reader(), s, last.Members, plan.ReadIDs(last.Reads)), table, last
}

// lookupParent names s's parent to the lookup server.
func (r observer) lookupParent(s *scope) rlookup.Parent {
	return rlookup.Parent{Kind: r.parentGVK().GroupKind(), Key: client.ObjectKeyFromObject(s.comp)}
}

// identity is who s's lookups are made for: the parent's ServiceAccount,
// or the controller itself when it writes as itself.
func (r observer) identity(s *scope) rlookup.Identity {
	sa := serviceAccount(s.comp, r.Options.DefaultServiceAccount)
	if sa == "" || s.writer == r.Client {
		return rlookup.Identity{}
	}
	return rlookup.Identity{Namespace: s.comp.GetNamespace(), Name: sa}
}

// plan renders in with the observed values, again with the values of
// the members its reads name while those differ from what it read (see
// plan.NewObservedPlan), and records the reads in s.observed.
func (r observer) plan(ctx context.Context, s *scope, loaded *templates.Bundle, in templates.Input, last *recall.Observed) (*plan.Plan, error) {
	var members map[string]recall.MemberKey
	observe := func(ctx context.Context, p *plan.Plan, held []observed.HeldObject, ids []string) map[string]map[string]any {
		members = r.memberKeys(p, held, s.comp.GetNamespace())
		return r.values(ctx, r.watches.Reader(), s, members, ids)
	}
	var denied []string
	answer := func(ctx context.Context, reads []lookup.Read) (lookup.Table, error) {
		table, d, err := r.lookups.Answers(ctx, r.lookupParent(s), r.identity(s), reads)
		denied = d
		return table, err
	}
	p, obs, err := plan.NewObservedPlan(ctx, r.renderer, loaded, in, cluster.NewAPIs(r.Mapper, r.APIReader), observe, answer)
	s.lookedUp = obs.Lookups
	if err != nil {
		return nil, err
	}
	if len(obs.Lookups) == 0 {
		r.lookups.Forget(r.lookupParent(s))
	}
	if s.stores != nil {
		// Each value is kept where it ends up (package valuestore).
		if err := s.stores.Place(p, obs.Generated); err != nil {
			return nil, err
		}
	}
	s.observed = &recall.Observed{Reads: obs.Reads, Held: obs.Held, Members: map[string]recall.MemberKey{}, Lookups: obs.Lookups, Denied: denied}
	if last == nil || !slices.Equal(last.Denied, denied) {
		for _, d := range denied {
			r.Recorder.Eventf(s.comp, nil, "Warning", "LookupDenied", "Render", "lookup answered empty: %s", d)
		}
	}
	for _, id := range plan.ReadIDs(obs.Reads) {
		if k, ok := members[id]; ok {
			s.observed.Members[id] = k
		}
	}
	if last != nil {
		s.observed.Unsettled = last.Unsettled
	}
	return p, nil
}

// memberKeys maps the ids of a plan's objects, and of the objects it
// held back, to the members they are.
func (r observer) memberKeys(p *plan.Plan, held []observed.HeldObject, namespace string) map[string]recall.MemberKey {
	out := make(map[string]recall.MemberKey, len(p.Objects)+len(held))
	for id, o := range p.Addressed() {
		out[id] = recall.MemberKey{GVK: o.GroupVersionKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	for _, h := range held {
		if _, ok := out[h.ID]; !ok {
			out[h.ID] = r.heldKey(h, namespace)
		}
	}
	return out
}

// heldKey is the member a held-back object would be: one of a namespaced
// kind rendered without a namespace is in the parent's.
func (r observer) heldKey(h observed.HeldObject, namespace string) recall.MemberKey {
	gvk := schema.FromAPIVersionAndKind(h.APIVersion, h.Kind)
	k := recall.MemberKey{GVK: gvk, Namespace: h.Namespace, Name: h.Name}
	if k.Namespace == "" {
		if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
			k.Namespace = namespace
		}
	}
	return k
}

// values reads, through reader, the observed objects of the members ids
// name (see observer): a member not applied yet, of a kind not watched,
// or not stencil's is left out (not observed).
func (r observer) values(ctx context.Context, reader client.Reader, s *scope, members map[string]recall.MemberKey, ids []string) map[string]map[string]any {
	var out map[string]map[string]any
	for _, id := range ids {
		k, ok := members[id]
		if !ok {
			continue
		}
		if !r.watches.Synced(k.GVK) {
			if _, err := r.watches.Ensure(ctx, []schema.GroupVersionKind{k.GVK}); err != nil || !r.watches.Synced(k.GVK) {
				continue // the pass's watch phase reports it
			}
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.GVK)
		if err := reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u); err != nil {
			continue
		}
		if v := plan.ObservedView(u, applyset.ParentID(s.comp), s.parent.record); v != nil {
			if out == nil {
				out = map[string]map[string]any{}
			}
			out[id] = v
		}
	}
	return out
}

// settle runs after the apply: when a value the render used is another
// now (a Service's clusterIP the apply just gave it), the pass is
// unsettled: its record of the members is not kept for the shortcut, and
// the member's event brings the next pass, which renders with the new
// value. MaxObservedPasses unsettled passes in a row stall the parent
// (reason Flapping) before anything is pruned.
func (r observer) settle(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.observed == nil {
		return ctrl.Result{}, nil
	}
	name := client.ObjectKeyFromObject(s.comp)
	key := inputKey(s.comp, s.plan.BundleRevision)
	defer r.observed.Put(name, key, s.observed)
	now := r.values(ctx, status.AfterApply(r.watches.Reader(), s.results), s, s.observed.Members, plan.ReadIDs(s.observed.Reads))
	moved := plan.ChangedReads(s.observed.Reads, now)
	var answers []string
	if len(s.observed.Lookups) > 0 {
		// An answer that moved under the render (the chart looked up an
		// object the apply just wrote): render again with it.
		var written []*unstructured.Unstructured
		for _, res := range s.results {
			written = append(written, res.Live)
		}
		if table, ok := r.lookups.Peek(r.lookupParent(s), s.observed.Lookups, written...); ok {
			for _, c := range lookup.Changed(s.observed.Lookups, table) {
				answers = append(answers, "lookup "+c.Key.String())
			}
		}
	}
	if len(moved) == 0 && len(answers) > 0 && changedNothing(s.results) {
		// Only answers moved, and not by this pass, which changed no
		// object: an outside change (a looked-up object edited) reached
		// the lookup informers after the render read them. The set is
		// as it was, so the parent stays as it is (no Reconciling, no
		// flap counted, nothing pruned); the informers' event of that
		// change brings the pass that renders with it.
		s.snapshot = nil
		s.stale = answers
		return ctrl.Result{}, nil
	}
	moved = append(moved, answers...)
	if len(moved) == 0 {
		s.observed.Unsettled = 0
		return ctrl.Result{}, nil
	}
	s.observed.Unsettled++
	s.snapshot = nil
	s.rerender = moved
	if s.observed.Unsettled < MaxObservedPasses {
		return ctrl.Result{}, nil
	}
	msg := fmt.Sprintf("the values templates read kept changing under their own render for %d passes in a row (%s): members feed each other's values; "+
		"stencil stops writing this Composition until its spec or its Bundle changes", s.observed.Unsettled, strings.Join(moved, ", "))
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonFlapping, "Render", "%s", msg)
	return reporter{r.CompositionReconciler}.stallTerminal(s, v1alpha1.ReasonFlapping, msg), nil
}

// changedNothing reports whether every apply of a pass left its object
// as it was.
func changedNothing(results []applyset.ApplyResult) bool {
	for _, res := range results {
		if res.Action != applyset.Unchanged {
			return false
		}
	}
	return true
}

// reportObserved adds to a pass's status, once its members have set it,
// what waits on what: held-back objects, or values that moved under the
// render, make the parent Reconciling (Ready false) with reason Waiting,
// unless it is Stalled.
func reportObserved(st *v1alpha1.CompositionStatus, generation int64, o *recall.Observed, rerender []string) {
	if o == nil || meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionStalled) {
		return
	}
	var waits []string
	for _, h := range o.Held {
		waits = append(waits, fmt.Sprintf("%s waits for %s", h, strings.Join(h.WaitsFor, ", ")))
	}
	if len(rerender) > 0 {
		waits = append(waits, "rendering again: "+strings.Join(rerender, ", ")+" changed")
	}
	if len(waits) == 0 {
		return
	}
	status.SetReconciling(st, generation, v1alpha1.ReasonWaiting, fmt.Sprintf("%s; %s", st.Summary, strings.Join(waits, "; ")))
}

// readsSettled reports whether every value last's render read is the one
// live holds now, and every lookup answers as it did (from the lookup
// informers, with no request): the shortcut's check that no used value
// moved.
func readsSettled(o *recall.Observed, live map[recall.MemberKey]*unstructured.Unstructured, id string, rec *applyset.Record, peek func([]lookup.Read) (lookup.Table, bool)) bool {
	if o == nil {
		return true
	}
	if len(o.Lookups) > 0 {
		table, ok := peek(o.Lookups)
		if !ok || len(lookup.Changed(o.Lookups, table)) > 0 {
			return false
		}
	}
	if len(o.Reads) == 0 {
		return true
	}
	now := map[string]map[string]any{}
	for mid, k := range o.Members {
		if u := live[k]; u != nil {
			if v := plan.ObservedView(u, id, rec); v != nil {
				now[mid] = v
			}
		}
	}
	return len(plan.ChangedReads(o.Reads, now)) == 0
}

// observedDigest identifies observed values, for the key of a failed
// render: a render that failed with some values is tried again with others.
func observedDigest(observed map[string]map[string]any) string {
	if len(observed) == 0 {
		return ""
	}
	data, _ := json.Marshal(observed)
	sum := sha256.Sum256(data)
	return "/" + hex.EncodeToString(sum[:8])
}
