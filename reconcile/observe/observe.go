package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	tobserved "github.com/stencil-dev/stencil/templates/observed"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	rlookup "github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/reconcile/watch"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// MaxPasses bounds a chain of re-renders driven by observed
// values: a pass ending with a value its render used already changed
// (the render must run again) is unsettled, and this many unsettled
// passes in a row, under the same inputs, stall the parent with reason
// Flapping (two members feeding each other's values would otherwise
// loop for ever). It is below the flapping rule's writes of one member
// (applyset.FlapDetector), so a loop of observed values is named as one.
const MaxPasses = 4

// Observer gives a pass's render the observed values of the set's own
// members (templates' observed and stencil.dev/wait-for) and decides,
// after the apply, whether the values it used moved (Settle). It is one
// controller's, and keeps, per parent, what its last render read.
//
// The values are read from the controller's cache, and only of members
// of this set that stencil applied: the object a render names by id is
// one of its own rendered objects (never a non-member), and its live
// object must carry the set's part-of label and fields of the field
// manager applyset.FieldManager. The writer (the parent's
// ServiceAccount) applied that object and its apply response held the
// whole object, a Secret's data included: the cache shows templates
// nothing the writer could not read itself.
type Observer struct {
	// Watches are the controller's member watches: the values are read
	// from their cache.
	Watches *watch.Watcher
	// Lookups answers the renders' lookups (package reconcile/lookup).
	Lookups *rlookup.Server
	// Renderer renders the plans.
	Renderer plan.Renderer
	// Mapper and Live (the API server, as the controller) are the served
	// APIs a render is placed with.
	Mapper meta.RESTMapper
	Live   client.Reader
	// Recorder records the Warning events of denied lookups.
	Recorder events.EventRecorder

	last recall.Memo[*recall.Observed]
}

// Pass names one pass's parent to the observer.
type Pass struct {
	// Parent is the set's parent.
	Parent applyset.Parent
	// Kind is the parent's kind.
	Kind schema.GroupKind
	// Identity is who the pass's lookups are made for: the parent's
	// ServiceAccount, or the zero Identity, the controller itself, when
	// it writes as itself.
	Identity rlookup.Identity
	// Record is the set's record of its members.
	Record *applyset.Record
	// Key is the key of the pass's inputs (the parent's UID, generation
	// and Bundle revision): what the last render read is kept under it.
	Key string
}

// LookupParent names the pass's parent to the lookup server.
func (p Pass) LookupParent() rlookup.Parent {
	return rlookup.Parent{Kind: p.Kind, Key: client.ObjectKeyFromObject(p.Parent)}
}

// Forget drops what the observer keeps of the parent name.
func (r *Observer) Forget(name types.NamespacedName) { r.last.Forget(name) }

// Given returns the observed values a pass's first render gets: those of
// the members the last render read (under the same inputs), read now;
// and the answers to the lookups it made, as the parent's identity may
// read them now.
func (r *Observer) Given(ctx context.Context, s Pass) (map[string]map[string]any, lookup.Table, *recall.Observed) {
	last, _ := r.last.Get(client.ObjectKeyFromObject(s.Parent), s.Key)
	if last == nil {
		return nil, nil, nil
	}
	var table lookup.Table
	if len(last.Lookups) > 0 {
		// Authorized now, as every answer a render gets (an account that
		// lost its access gets empty answers, not what its last render
		// was given). An error leaves the render to ask.
		table, _, _ = r.Lookups.Answers(ctx, s.LookupParent(), s.Identity, last.Lookups)
	}
	return r.values(ctx, r.Watches.Reader(), s, last.Members, plan.ReadIDs(last.Reads)), table, last
}

// LookedUp is what a render looked up: its reads, sorted by key, and
// those the parent's identity could not make ("<key>: <why>").
type LookedUp struct {
	Reads  []lookup.Read
	Denied []string
}

// Plan renders in with the observed values, again with the values of
// the members its reads name while those differ from what it read (see
// plan.NewObservedPlan), and returns the plan with what the render read
// and what it looked up (failed or not). Each generated value is placed
// in stores (nil: the Bundle generates none; package valuestore).
func (r *Observer) Plan(ctx context.Context, s Pass, loaded *templates.Bundle, in templates.Input, last *recall.Observed, stores *valuestore.Stores) (*plan.Plan, *recall.Observed, LookedUp, error) {
	var members map[string]recall.MemberKey
	observe := func(ctx context.Context, p *plan.Plan, held []tobserved.HeldObject, ids []string) map[string]map[string]any {
		members = r.memberKeys(p, held, s.Parent.GetNamespace())
		return r.values(ctx, r.Watches.Reader(), s, members, ids)
	}
	var denied []string
	answer := func(ctx context.Context, reads []lookup.Read) (lookup.Table, error) {
		table, d, err := r.Lookups.Answers(ctx, s.LookupParent(), s.Identity, reads)
		denied = d
		return table, err
	}
	p, obs, err := plan.NewObservedPlan(ctx, r.Renderer, loaded, in, cluster.NewAPIs(r.Mapper, r.Live), observe, answer)
	if err != nil {
		return nil, nil, LookedUp{Reads: obs.Lookups, Denied: denied}, err
	}
	if len(obs.Lookups) == 0 {
		r.Lookups.Forget(s.LookupParent())
	}
	if stores != nil {
		// Each value is kept where it ends up (package valuestore).
		if err := stores.Place(p, obs.Generated); err != nil {
			return nil, nil, LookedUp{Reads: obs.Lookups, Denied: denied}, err
		}
	}
	observed := &recall.Observed{Reads: obs.Reads, Held: obs.Held, Members: map[string]recall.MemberKey{}, Lookups: obs.Lookups, Denied: denied}
	if last == nil || !slices.Equal(last.Denied, denied) {
		for _, d := range denied {
			r.Recorder.Eventf(s.Parent, nil, "Warning", "LookupDenied", "Render", "lookup answered empty: %s", d)
		}
	}
	for _, id := range plan.ReadIDs(obs.Reads) {
		if k, ok := members[id]; ok {
			observed.Members[id] = k
		}
	}
	if last != nil {
		observed.Unsettled = last.Unsettled
	}
	return p, observed, LookedUp{Reads: obs.Lookups, Denied: denied}, nil
}

// memberKeys maps the ids of a plan's objects, and of the objects it
// held back, to the members they are.
func (r *Observer) memberKeys(p *plan.Plan, held []tobserved.HeldObject, namespace string) map[string]recall.MemberKey {
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
func (r *Observer) heldKey(h tobserved.HeldObject, namespace string) recall.MemberKey {
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
func (r *Observer) values(ctx context.Context, reader client.Reader, s Pass, members map[string]recall.MemberKey, ids []string) map[string]map[string]any {
	var out map[string]map[string]any
	for _, id := range ids {
		k, ok := members[id]
		if !ok {
			continue
		}
		if !r.Watches.Synced(k.GVK) {
			if _, err := r.Watches.Ensure(ctx, []schema.GroupVersionKind{k.GVK}); err != nil || !r.Watches.Synced(k.GVK) {
				continue // the pass's watch phase reports it
			}
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.GVK)
		if err := reader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, u); err != nil {
			continue
		}
		if v := plan.ObservedView(u, applyset.ParentID(s.Parent), s.Record); v != nil {
			if out == nil {
				out = map[string]map[string]any{}
			}
			out[id] = v
		}
	}
	return out
}

// Settlement is what Settle found of the values a pass's render used.
type Settlement struct {
	// Rerender names the values that moved under the render (its own
	// apply moved them): the pass is unsettled, its members' events bring
	// the next pass, which renders with the new values.
	Rerender []string
	// Stale names the answers to lookups an outside change moved while
	// the pass changed nothing: the set is as it was, the parent stays
	// as it is, and the lookup informers' event brings the next pass.
	Stale []string
	// Flapping, when not empty, is why the parent stalls (reason
	// Flapping): MaxPasses unsettled passes in a row.
	Flapping string
}

// Settle runs after the apply, with its results, on what the render read
// (observed, as Plan returned it): when a value the render used is
// another now (a Service's clusterIP the apply just gave it), the pass
// is unsettled. MaxPasses unsettled passes in a row stall the parent
// (reason Flapping) before anything is pruned. What the render read is
// kept for the next pass's Given.
func (r *Observer) Settle(ctx context.Context, s Pass, observed *recall.Observed, results []applyset.ApplyResult) Settlement {
	if observed == nil {
		return Settlement{}
	}
	defer r.last.Put(client.ObjectKeyFromObject(s.Parent), s.Key, observed)
	now := r.values(ctx, status.AfterApply(r.Watches.Reader(), results), s, observed.Members, plan.ReadIDs(observed.Reads))
	moved := plan.ChangedReads(observed.Reads, now)
	var answers []string
	if len(observed.Lookups) > 0 {
		// An answer that moved under the render (the chart looked up an
		// object the apply just wrote): render again with it.
		var written []*unstructured.Unstructured
		for _, res := range results {
			written = append(written, res.Live)
		}
		if table, ok := r.Lookups.Peek(s.LookupParent(), observed.Lookups, written...); ok {
			for _, c := range lookup.Changed(observed.Lookups, table) {
				answers = append(answers, "lookup "+c.Key.String())
			}
		}
	}
	if len(moved) == 0 && len(answers) > 0 && changedNothing(results) {
		// Only answers moved, and not by this pass, which changed no
		// object: an outside change (a looked-up object edited) reached
		// the lookup informers after the render read them.
		return Settlement{Stale: answers}
	}
	moved = append(moved, answers...)
	if len(moved) == 0 {
		observed.Unsettled = 0
		return Settlement{}
	}
	observed.Unsettled++
	out := Settlement{Rerender: moved}
	if observed.Unsettled >= MaxPasses {
		out.Flapping = fmt.Sprintf("the values templates read kept changing under their own render for %d passes in a row (%s): members feed each other's values; "+
			"stencil stops writing this Composition until its spec or its Bundle changes", observed.Unsettled, strings.Join(moved, ", "))
	}
	return out
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

// Report adds to a pass's status, once its members have set it,
// what waits on what: held-back objects, or values that moved under the
// render, make the parent Reconciling (Ready false) with reason Waiting,
// unless it is Stalled.
func Report(st *v1alpha1.CompositionStatus, generation int64, o *recall.Observed, rerender []string) {
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

// ReadsSettled reports whether every value last's render read is the one
// live holds now, and every lookup answers as it did (from the lookup
// informers, with no request): the shortcut's check that no used value
// moved.
func ReadsSettled(o *recall.Observed, live map[recall.MemberKey]*unstructured.Unstructured, id string, rec *applyset.Record, peek func([]lookup.Read) (lookup.Table, bool)) bool {
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

// Digest identifies observed values, for the key of a failed
// render: a render that failed with some values is tried again with others.
func Digest(observed map[string]map[string]any) string {
	if len(observed) == 0 {
		return ""
	}
	data, _ := json.Marshal(observed)
	sum := sha256.Sum256(data)
	return "/" + hex.EncodeToString(sum[:8])
}
