package reconcile

import (
	"context"
	"slices"

	"github.com/stencil-dev/stencil/reconcile/hooks"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/observe"

	"github.com/stencil-dev/stencil/reconcile/status"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// The unchanged-pass shortcut: what a successful pass saw (snapshot,
// keepSnapshot) is kept in the passes memo, and a later pass that would
// find the same ends with its status (skipUnchanged).

// skipUnchanged ends the pass with the status alone when the Bundle's
// revision, the Composition's render inputs and every live member are what
// the last successful pass saw (see recall.Pass): the members' kstatus is read
// from the cache, and nothing is rendered, compared, read from the API
// server or written. Otherwise it forgets the last pass and the full pass
// follows.
func (r *Controller) skipUnchanged(ctx context.Context, s *scope) (ctrl.Result, error) {
	name := client.ObjectKeyFromObject(s.comp)
	last, ok := r.passes.Get(name, "")
	if !ok {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	r.passes.Forget(name)
	// The status is written against the cached parent: only when the
	// cache holds it as stencil last wrote it (see recordedParent).
	if !r.parentInPlace(s.comp) || r.store.Version(name) != s.comp.GetResourceVersion() {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	key, assignment := r.cachedRenderKey(ctx, s.comp)
	if key != last.Key {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	live, ok := r.watches.ListLive(ctx, applyset.ParentID(s.comp), last.Planned)
	peek := func(reads []lookup.Read) (lookup.Table, bool) {
		return r.Lookups.Peek(r.lookupParent(s), reads)
	}
	if !ok || !last.Unchanged(live) || !observe.ReadsSettled(last.Observed, live, applyset.ParentID(s.comp), applyset.RecordOf(s.comp), peek) {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	metrics.CacheLookup(metrics.CachePass, true)
	s.unchanged, s.assignment = true, assignment
	members := make([]v1alpha1.MemberStatus, len(last.Ordinary))
	parent := status.ExpressionParent(s.comp, last.Outputs)
	lives := make(map[string]map[string]any, len(last.Ordinary))
	for i, k := range last.Ordinary {
		members[i] = status.MemberOf(k.GVK, k.Namespace, k.Name, live[k], nil)
		if obj := live[k]; obj != nil {
			status.Judge(ctx, &members[i], last.Outputs, parent, last.IDs[i], obj)
			lives[last.IDs[i]] = status.ExpressionView(obj)
		}
	}
	s.status.BundleRevision, s.status.ValuesMigrations, s.status.Notes = last.Revision, last.ValuesMigrations, last.Notes
	if last.Observed != nil {
		status.SetLookups(&s.status, last.Observed.Lookups, last.Observed.Denied)
	}
	status.Summarize(&s.status, s.comp.GetGeneration(), members)
	observe.Report(&s.status, s.comp.GetGeneration(), last.Observed, nil)
	status.SetOutputs(ctx, &s.status, s.comp.GetGeneration(), last.Outputs, parent, lives)
	r.passes.Put(name, "", last)
	s.done = true
	return ctrl.Result{}, nil
}

// parentInPlace reports whether the cached Composition carries what
// ensureParent makes sure of: the finalizer, the ApplySet id and tooling,
// and annotations that mirror its record (a change of them by hand is
// put back by the full pass, though it changes nothing the pass does).
func (r *Controller) parentInPlace(comp applyset.Parent) bool {
	return slices.Contains(comp.GetFinalizers(), v1alpha1.Finalizer) &&
		comp.GetLabels()[applyset.LabelApplySetID] == applyset.ParentID(comp) &&
		comp.GetAnnotations()[applyset.AnnotationTooling] == "stencil/"+r.Options.Version &&
		applyset.Mirrors(comp)
}

// cachedRenderKey returns the renderKey of the Composition with the revision
// it is assigned (see assign) and the capabilities as the controller
// holds them, with the assignment; "" when the Bundle or the revision
// cannot be read or loaded. .Release.IsUpgrade comes from the cached
// Composition's recorded applyset.Inventory here (a render reads it
// live): a stale cache can only make the key differ, and bring the full
// pass.
func (r *Controller) cachedRenderKey(ctx context.Context, comp applyset.Parent) (string, *rollout.Assignment) {
	a, err := r.Assign(ctx, comp)
	if err != nil || a.NotFound || a.Refused {
		return "", nil
	}
	loaded, _, err := r.LoadAssigned(ctx, a, true)
	if err != nil {
		return "", nil
	}
	caps, err := r.APIs.Get(ctx)
	if err != nil {
		return "", nil
	}
	in := plan.RenderInput(comp, plan.Live(comp), caps.Caps)
	// As the render gives them (see render).
	if in.Values, err = r.RenderValues(ctx, comp, loaded); err != nil {
		return "", nil
	}
	return plan.RenderKey(comp, revision.RenderKey(loaded), in, caps.Revision), &a.Assignment
}

// snapshot records, before anything is applied, every live member of the
// set as the cache holds it, for the next pass's skipUnchanged. The record
// is kept only if the pass succeeds and keepSnapshot allows it.
func (r *Controller) snapshot(ctx context.Context, s *scope) (ctrl.Result, error) {
	objs := s.plan.Objects
	if s.stores != nil && s.stores.Controller() != nil {
		// The controller's store is no object of the plan, but a
		// change of it (deleted by hand) brings a full pass too.
		objs = append(slices.Clone(objs), s.stores.Controller())
	}
	planned := make([]recall.MemberKey, len(objs))
	var ordinary []recall.MemberKey
	var ids []string
	for i, o := range objs {
		planned[i] = recall.MemberKey{GVK: o.GroupVersionKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		if !plan.IsHook(o) && !valuestore.IsStore(o) {
			ordinary = append(ordinary, planned[i])
			ids = append(ids, outputs.ID(o))
		}
	}
	live, ok := r.watches.ListLive(ctx, applyset.ParentID(s.comp), planned)
	if !ok {
		return ctrl.Result{}, nil
	}
	gks, nss := s.parent.Inventory.Annotations()
	p := &recall.Pass{Key: s.renderKey, Revision: s.plan.BundleRevision, ValuesMigrations: s.plan.ValuesMigrations, Notes: s.status.Notes, Inventory: gks + ";" + nss, Planned: planned, Ordinary: ordinary, IDs: ids, Outputs: s.outputs, Observed: s.observed, Live: make(map[recall.MemberKey]recall.MemberState, len(live))}
	for k, u := range live {
		p.Live[k] = recall.MemberState{ResourceVersion: u.GetResourceVersion(), Fingerprint: recall.Fingerprint(u)}
	}
	s.snapshot = p
	return ctrl.Result{}, nil
}

// keepSnapshot reports whether the pass's snapshot stands for the
// converged state: every apply found its member up to date (no write),
// every member is still at the resourceVersion of the snapshot, so the
// versions the apply compared are exactly those recorded, and the
// recorded applyset.Inventory is the one the render saw (widening or pruning
// changes what a render may see: .Release.IsUpgrade, the annotations).
// Otherwise the next pass is a full one.
func (r *Controller) keepSnapshot(ctx context.Context, s *scope) bool {
	if s.snapshot == nil {
		return false
	}
	// A hook still to run or to finish is waited on through its status
	// (a Job completing) or its members' (post hooks wait for them to be
	// Current): changes the memo would take for status-only ones.
	if !ordinaryApplied(s) || len(hooks.Pending(s.status.Hooks, s.plan.Objects)) > 0 {
		return false
	}
	gks, nss := s.parent.Inventory.Annotations()
	if gks+";"+nss != s.snapshot.Inventory {
		return false
	}
	// Members of kinds the plan no longer renders are still recorded: prune
	// left some (a hook it spares while it runs is pruned once it finishes,
	// a status change the memo would take for nothing). The memo sees only
	// the plan's kinds, so it is kept only once the record is the plan's.
	if pgks, pnss := s.plan.Inventory.Annotations(); pgks != gks || pnss != nss {
		return false
	}
	for _, res := range s.results {
		if res.Action != applyset.Unchanged {
			return false
		}
	}
	live, ok := r.watches.ListLive(ctx, applyset.ParentID(s.comp), s.snapshot.Planned)
	if !ok || len(live) != len(s.snapshot.Live) {
		return false
	}
	for k, u := range live {
		if seen, ok := s.snapshot.Live[k]; !ok || seen.ResourceVersion != u.GetResourceVersion() {
			return false
		}
	}
	return true
}
