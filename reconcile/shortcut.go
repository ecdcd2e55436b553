package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"slices"

	"github.com/stencil-dev/stencil/reconcile/hooks"
	"github.com/stencil-dev/stencil/reconcile/metrics"

	"github.com/stencil-dev/stencil/reconcile/status"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// lastPass is what the passes memo keeps, per Composition: what its last successful pass saw:
// the inputs of its render (renderKey: the Composition's UID, generation,
// the labels and annotations templates read, and the Bundle's revision),
// the planned members, and every live member of the set as the cache held
// it before that pass applied anything. When a later pass finds all of it
// unchanged, a render and a comparison would find nothing to do: the pass
// only recomputes the status from the members (see skipUnchanged). That is
// what keeps a member's status change (a Deployment rolling out, a Pod
// becoming ready) cheap.
//
// A member is unchanged when its resourceVersion is the one recorded, or
// when everything but its status is (see fingerprint): a status write
// changes the resourceVersion and nothing stencil applies. Any other
// change of a member (drift), a member gone, or a new object carrying the
// set's label brings the full pass. The memo is dropped when a pass does
// not succeed, when the Composition is deleted and when its UID changes
// (the UID is part of the key).
//
// What is recorded is the state the apply compared and found up to date:
// it is read before the apply, and kept only when the pass wrote no
// member and no member's resourceVersion moved until the pass ended (see
// keepSnapshot). A state read before a write is the drifted one, and a
// member returning to it must bring a full pass, not be taken for the
// converged state.
type lastPass struct {
	key       string                    // renderKey of the render
	revision  string                    // the Bundle's revision
	inventory string                    // the recorded applyset.Inventory the render saw
	planned   []memberKey               // the plan's objects, hooks included, in apply order
	ordinary  []memberKey               // those that are not hooks: the members status lists
	live      map[memberKey]memberState // every live member of the set, as listed
	ids       []string                  // the ordinary members' ids (outputs.ID), in the order of ordinary
	outputs   *outputs.Set              // the Bundle's outputs and readiness rules
}

// memberKey names a member.
type memberKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// memberState is a live member as one pass saw it.
type memberState struct {
	resourceVersion string
	fingerprint     [sha256.Size]byte
}

// shortcut is the unchanged-pass check: it records what a successful
// pass saw (snapshot, keepSnapshot) in the reconciler's passes memo and
// ends a later pass that would find the same (skipUnchanged). It is built
// per pass from the reconciler.
type shortcut struct{ *CompositionReconciler }

// skipUnchanged ends the pass with the status alone when the Bundle's
// revision, the Composition's render inputs and every live member are what
// the last successful pass saw (see lastPass): the members' kstatus is read
// from the cache, and nothing is rendered, compared, read from the API
// server or written. Otherwise it forgets the last pass and the full pass
// follows.
func (r shortcut) skipUnchanged(ctx context.Context, s *scope) (ctrl.Result, error) {
	name := client.ObjectKeyFromObject(s.comp)
	last, ok := r.passes.get(name, "")
	if !ok {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	r.passes.forget(name)
	// The status is written against the cached parent: only when the
	// cache holds it as stencil last wrote it (see recordedParent).
	if !r.parentInPlace(s.comp) || r.version(name) != s.comp.GetResourceVersion() || r.inputKey(ctx, s.comp) != last.key {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	live, ok := r.listLive(ctx, s.comp, last.planned)
	if !ok || !last.unchanged(live) {
		metrics.CacheLookup(metrics.CachePass, false)
		return ctrl.Result{}, nil
	}
	metrics.CacheLookup(metrics.CachePass, true)
	s.unchanged = true
	members := make([]v1alpha1.MemberStatus, len(last.ordinary))
	parent := parentObject(s.comp)
	lives := make(map[string]map[string]any, len(last.ordinary))
	for i, k := range last.ordinary {
		members[i] = status.MemberOf(k.gvk, k.namespace, k.name, live[k], nil)
		if obj := live[k]; obj != nil {
			status.Judge(ctx, &members[i], last.outputs, parent, last.ids[i], obj)
			lives[last.ids[i]] = obj.Object
		}
	}
	s.status.BundleRevision = last.revision
	status.Summarize(&s.status, s.comp.GetGeneration(), members)
	status.SetOutputs(ctx, &s.status, s.comp.GetGeneration(), last.outputs, parent, lives)
	r.passes.put(name, "", last)
	s.done = true
	return ctrl.Result{}, nil
}

// parentInPlace reports whether the cached Composition carries what
// ensureParent makes sure of: the finalizer, the ApplySet id and tooling.
func (r shortcut) parentInPlace(comp applyset.Parent) bool {
	return slices.Contains(comp.GetFinalizers(), Finalizer) &&
		comp.GetLabels()[applyset.LabelApplySetID] == applyset.ParentID(comp) &&
		comp.GetAnnotations()[applyset.AnnotationTooling] == "stencil/"+r.Options.Version
}

// inputKey returns the renderKey of the Composition with its Bundle and
// the capabilities as the controller holds them, or "" when the Bundle
// cannot be read or loaded. .Release.IsUpgrade comes from the cached
// Composition's recorded applyset.Inventory here (a render reads it live): a
// stale cache can only make the key differ, and bring the full pass.
func (r shortcut) inputKey(ctx context.Context, comp applyset.Parent) string {
	bundle := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: comp.ParentSpec().Bundle}, bundle); err != nil {
		return ""
	}
	loaded, err := r.bundles.load(bundle)
	if err != nil {
		return ""
	}
	caps, err := r.capabilities.Get(ctx)
	if err != nil {
		return ""
	}
	live := &plan.LiveComposition{UID: comp.GetUID(), Installed: plan.Installed(applyset.ParseInventory(comp.GetAnnotations()))}
	return renderKey(comp, loaded.Revision(), plan.RenderInput(comp, live, caps.Caps), caps.Revision)
}

// snapshot records, before anything is applied, every live member of the
// set as the cache holds it, for the next pass's skipUnchanged. The record
// is kept only if the pass succeeds and keepSnapshot allows it.
func (r shortcut) snapshot(ctx context.Context, s *scope) (ctrl.Result, error) {
	planned := make([]memberKey, len(s.plan.Objects))
	var ordinary []memberKey
	var ids []string
	for i, o := range s.plan.Objects {
		planned[i] = memberKey{gvk: o.GroupVersionKind(), namespace: o.GetNamespace(), name: o.GetName()}
		if !plan.IsHook(o) {
			ordinary = append(ordinary, planned[i])
			ids = append(ids, outputs.ID(o))
		}
	}
	live, ok := r.listLive(ctx, s.comp, planned)
	if !ok {
		return ctrl.Result{}, nil
	}
	gks, nss := s.parent.inventory.Annotations()
	p := &lastPass{key: s.renderKey, revision: s.plan.BundleRevision, inventory: gks + ";" + nss, planned: planned, ordinary: ordinary, ids: ids, outputs: s.outputs, live: make(map[memberKey]memberState, len(live))}
	for k, u := range live {
		p.live[k] = memberState{resourceVersion: u.GetResourceVersion(), fingerprint: fingerprint(u)}
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
func (r shortcut) keepSnapshot(ctx context.Context, s *scope) bool {
	if s.snapshot == nil {
		return false
	}
	// A hook still to run or to finish is waited on through its status
	// (a Job completing) or its members' (post hooks wait for them to be
	// Current): changes the memo would take for status-only ones.
	if !ordinaryApplied(s) || len(hooks.Pending(s.status.Hooks, s.plan.Objects)) > 0 {
		return false
	}
	gks, nss := s.parent.inventory.Annotations()
	if gks+";"+nss != s.snapshot.inventory {
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
	live, ok := r.listLive(ctx, s.comp, s.snapshot.planned)
	if !ok || len(live) != len(s.snapshot.live) {
		return false
	}
	for k, u := range live {
		if seen, ok := s.snapshot.live[k]; !ok || seen.resourceVersion != u.GetResourceVersion() {
			return false
		}
	}
	return true
}

// unchanged reports whether the live members are those the pass saw:
// the same objects, each at the same resourceVersion or differing only in
// its status.
func (p *lastPass) unchanged(live map[memberKey]*unstructured.Unstructured) bool {
	if len(live) != len(p.live) {
		return false
	}
	for k, u := range live {
		seen, ok := p.live[k]
		if !ok {
			return false
		}
		if u.GetResourceVersion() == seen.resourceVersion {
			continue
		}
		if fingerprint(u) != seen.fingerprint {
			return false
		}
		// Only the status changed: remember the new version, so the
		// next event of the same member compares versions alone.
		p.live[k] = memberState{resourceVersion: u.GetResourceVersion(), fingerprint: seen.fingerprint}
	}
	return true
}

// listLive lists from the cache every object carrying the set's part-of
// label, of the planned members' kinds, in their namespaces. ok is false
// when a kind's watch has not synced (its members would have to be read
// from the API server) or a list fails: the full pass handles those.
func (r shortcut) listLive(ctx context.Context, comp applyset.Parent, planned []memberKey) (map[memberKey]*unstructured.Unstructured, bool) {
	type kindIn struct {
		gvk       schema.GroupVersionKind
		namespace string
	}
	var lists []kindIn
	for _, k := range planned {
		if l := (kindIn{k.gvk, k.namespace}); !slices.Contains(lists, l) {
			lists = append(lists, l)
		}
	}
	id := applyset.ParentID(comp)
	live := map[memberKey]*unstructured.Unstructured{}
	for _, l := range lists {
		list, ok := r.watches.List(ctx, l.gvk, l.namespace, id)
		if !ok {
			return nil, false
		}
		for i := range list.Items {
			u := &list.Items[i]
			live[memberKey{gvk: l.gvk, namespace: u.GetNamespace(), name: u.GetName()}] = u
		}
	}
	return live, true
}

// fingerprint hashes a member as stencil's decisions see it: everything
// but its status, its resourceVersion, and the managedFields entries of
// subresources (a status write) and their timestamps. Two objects with the
// same fingerprint would be applied and pruned the same way.
func fingerprint(u *unstructured.Unstructured) [sha256.Size]byte {
	obj := maps.Clone(u.Object)
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "resourceVersion")
		if entries, ok := md["managedFields"].([]any); ok {
			kept := make([]any, 0, len(entries))
			for _, e := range entries {
				f, ok := e.(map[string]any)
				if !ok {
					continue
				}
				if sub, _ := f["subresource"].(string); sub != "" {
					continue
				}
				f = maps.Clone(f)
				delete(f, "time")
				kept = append(kept, f)
			}
			md["managedFields"] = kept
		}
		obj["metadata"] = md
	}
	data, err := json.Marshal(obj)
	if err != nil {
		// Unstructured content always marshals; if it did not, no two
		// fingerprints would match and every pass would be a full one.
		data = []byte(u.GetResourceVersion())
	}
	return sha256.Sum256(data)
}
