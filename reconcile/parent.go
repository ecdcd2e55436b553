package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// writeStatus patches p's status to st (a merge patch from what p holds),
// and keeps st as p's status. With lock, the patch carries p's
// resourceVersion as a precondition (a conflict when p changed since).
func writeStatus(ctx context.Context, c client.Client, p applyset.Parent, st v1alpha1.CompositionStatus, lock bool) error {
	var opts []client.MergeFromOption
	if lock {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	switch p := p.(type) {
	case *v1alpha1.Composition:
		orig := p.DeepCopy()
		p.Status = st
		return c.Status().Patch(ctx, p, client.MergeFromWithOptions(orig, opts...))
	case *applyset.Instance:
		content, err := applyset.InstanceStatus(st)
		if err != nil {
			return err
		}
		orig := p.Unstructured.DeepCopy()
		p.Object["status"] = content
		*p.ParentStatus() = st
		return c.Status().Patch(ctx, p.Unstructured, client.MergeFromWithOptions(orig, opts...))
	}
	return fmt.Errorf("unknown kind of parent %T", p)
}

// Finalizer keeps a Composition until its members are deleted or orphaned.
const Finalizer = "stencil.dev/finalizer"

// parentState is the ApplySet metadata stencil keeps on a Composition.
type parentState struct {
	// inventory is what prune and deletion act on (see applyset.Recorded).
	inventory applyset.Inventory
	finalizer bool
	// annotated is the inventory the parent's annotations name, as read:
	// when it differs from inventory, writeParent rewrites them.
	annotated applyset.Inventory
	// read: the state was read from the parent (it is what the status
	// records as status.inventory).
	read bool
	// unconfirmed: read from a cached parent this process had neither
	// written nor read live (see cacheTrusted); the pass's writes of the
	// parent are made only at its resourceVersion.
	unconfirmed bool
	// ignored is what the annotations, as read live, name beyond the
	// record (see applyset.Recorded), for warnIgnored.
	ignored applyset.Inventory
	// record is the set's record of its members (see applyset.Record):
	// read with the inventory, added to as the pass applies, written
	// with its status (see inventoryRecord).
	record *applyset.Record
}

// readParent reads the parent's recorded applyset.Inventory and finalizer
// from the API server: never from the cache, which may not have seen the
// last widening yet.
func (r *CompositionReconciler) readParent(ctx context.Context, comp applyset.Parent) (parentState, error) {
	live, err := applyset.Reread(ctx, r.APIReader, comp)
	if err != nil {
		return parentState{}, fmt.Errorf("read %s: %w", applyset.Describe(comp), err)
	}
	r.parentVersions.Put(client.ObjectKeyFromObject(comp), "", live.GetResourceVersion())
	st := r.stateOf(comp, live)
	r.warnIgnored(comp, st.ignored)
	return st, nil
}

// seed makes the record of a parent an earlier stencil reconciled, which
// has none (see applyset.RecordOf), from a live listing of its inventory
// as the controller (applyset.SeedRecord): once, the pass's record
// written with its status then holds it. recordedParent seeds what it
// reads; a pass that reads with readParent seeds before it acts.
func (r *CompositionReconciler) seed(ctx context.Context, comp applyset.Parent, st parentState) error {
	return applyset.SeedRecord(ctx, r.APIReader, r.Mapper, comp, st.inventory, st.record)
}

// recordedParent returns the parent's recorded applyset.Inventory and finalizer:
// from comp, the cached parent, when the cache can be trusted with it
// (cacheTrusted), and live (readParent) otherwise. After anyone else's
// write of a parent stencil recorded, the first pass reads live: the whole
// parent, whose status then replaces comp's, so that the status written
// at the end of the pass is compared with what the API server holds, not
// with a cached status that lags behind stencil's last write (which would
// send the same status again).
func (r *CompositionReconciler) recordedParent(ctx context.Context, comp applyset.Parent) (parentState, error) {
	if trusted, unconfirmed := r.cacheTrusted(comp); trusted {
		inv, _ := applyset.Recorded(comp)
		st := parentState{inventory: inv, finalizer: slices.Contains(comp.GetFinalizers(), Finalizer),
			annotated: applyset.ParseInventory(comp.GetAnnotations()).Normalize(comp.GetNamespace()), read: true,
			unconfirmed: unconfirmed, record: applyset.RecordOf(comp)}
		return st, r.seed(ctx, comp, st)
	}
	live, err := applyset.Reread(ctx, r.APIReader, comp)
	if err != nil {
		return parentState{}, fmt.Errorf("read %s: %w", applyset.Describe(comp), err)
	}
	r.parentVersions.Put(client.ObjectKeyFromObject(comp), "", live.GetResourceVersion())
	adoptStatus(comp, live)
	st := r.stateOf(comp, live)
	return st, r.seed(ctx, comp, st)
}

// cacheTrusted reports whether the cached parent comp holds everything
// stencil recorded on it, so that no live read is needed (see
// docs/reconcile.md and the package doc, "The cached parent"):
//
//   - comp is at the resourceVersion this process last wrote or read live:
//     a resourceVersion names one state of the object, and anything
//     written since shows as another version;
//   - or this process never wrote nor read comp, and comp holds no status
//     at all: no stencil process has recorded anything on it as the cache
//     holds it (only the controller writes status), the common case of a
//     parent just created. The pass is then unconfirmed: its writes of the
//     parent carry comp's resourceVersion as a precondition (see
//     writeParent, writeStatus), so that a newer version, one a lagging
//     cache has not seen, fails them and the next pass reads live.
func (r *CompositionReconciler) cacheTrusted(comp applyset.Parent) (trusted, unconfirmed bool) {
	v := comp.GetResourceVersion()
	if v == "" {
		return false, false
	}
	known, ok := r.parentVersions.Get(client.ObjectKeyFromObject(comp), "")
	if ok {
		return known == v, false
	}
	if neverReconciled(comp) {
		return true, true
	}
	return false, false
}

// neverReconciled reports whether p's status is empty: no stencil process
// wrote it (only the controller writes a parent's status, and every
// status it writes has at least an inventory record).
func neverReconciled(p applyset.Parent) bool {
	return equality.Semantic.DeepEqual(*p.ParentStatus(), v1alpha1.CompositionStatus{})
}

// unconfirmedVersion is what parentVersions holds for a parent whose
// unconfirmed pass found a newer version than its cache's: no
// resourceVersion equals it, so the next pass reads live.
const unconfirmedVersion = "unconfirmed"

// noteConflict makes the next pass of comp read it live when err is a
// conflict of an unconfirmed pass's write (see cacheTrusted).
func (r *CompositionReconciler) noteConflict(comp applyset.Parent, st parentState, err error) {
	if st.unconfirmed && apierrors.IsConflict(err) {
		r.parentVersions.Put(client.ObjectKeyFromObject(comp), "", unconfirmedVersion)
	}
}

// adoptStatus makes live's status comp's: the status it holds, as the
// base of the next status write.
func adoptStatus(comp, live applyset.Parent) {
	*comp.ParentStatus() = *live.ParentStatus()
	if in, ok := comp.(*applyset.Instance); ok {
		if st, ok := live.(*applyset.Instance).Object["status"]; ok {
			in.Object["status"] = st
		} else {
			delete(in.Object, "status")
		}
	}
}

// stateOf is the ApplySet state live, the parent comp as read from the
// API server, records (see applyset.Recorded). What its annotations name
// beyond the controller's own record was added by hand: it is ignored,
// with a Warning event, and the next write of the metadata drops it.
func (r *CompositionReconciler) stateOf(comp, live applyset.Parent) parentState {
	inv, ignored := applyset.Recorded(live)
	return parentState{
		inventory: inv,
		finalizer: slices.Contains(live.GetFinalizers(), Finalizer),
		annotated: applyset.ParseInventory(live.GetAnnotations()).Normalize(comp.GetNamespace()),
		read:      true,
		ignored:   ignored,
		record:    applyset.RecordOf(live),
	}
}

// warnIgnored records a Warning event naming what the annotations of comp
// name beyond stencil's record (ignored). A parent never reconciled has
// no record: its annotations, admission's (see package admission), are
// not warned of; widen warns only of what the pass's render does not
// hold, since admission widens the annotations with a render's kinds
// before the pass records them.
func (r *CompositionReconciler) warnIgnored(comp applyset.Parent, ignored applyset.Inventory) {
	if ignored.Empty() || neverReconciled(comp) {
		return
	}
	gks, nss := ignored.Annotations()
	r.Recorder.Eventf(comp, nil, "Warning", "InventoryIgnored", "Prune",
		"the ApplySet annotations name group-kinds [%s] and namespaces [%s] that stencil never recorded: they are ignored (never listed, pruned or deleted from)", gks, nss)
}

// inventoryRecord is the status.inventory a pass writes: the inventory it
// read and wrote (s.parent) with the record of its members, or, when it
// read none, the record comp holds. A parent never reconciled gets an
// empty record, members included, so that its annotations are never taken
// for an earlier version's record, nor its labelled objects for members
// (see applyset.Recorded, applyset.RecordOf).
func inventoryRecord(s *scope) *v1alpha1.InventoryStatus {
	if s.parent.read {
		out := s.parent.inventory.Normalize(s.comp.GetNamespace()).Status()
		out.Members = s.parent.record.Status()
		if s.parent.record == nil && s.comp.ParentStatus().Inventory != nil {
			out.Members = s.comp.ParentStatus().Inventory.Members.DeepCopy()
		}
		return out
	}
	if st := s.comp.ParentStatus(); st.Inventory != nil || st.ObservedGeneration > 0 || len(st.Conditions) > 0 {
		return st.Inventory.DeepCopy()
	}
	return &v1alpha1.InventoryStatus{Members: &v1alpha1.MemberRecord{}}
}

// writeParent server-side-applies the ApplySet metadata (id label, tooling,
// group-kinds and namespaces annotations, finalizer) to the Composition, when
// it differs from what was read (from: its annotations as read, which may
// name more than its inventory, see applyset.Recorded). It returns the new
// state.
func (r *CompositionReconciler) writeParent(ctx context.Context, comp applyset.Parent, from, to parentState) (parentState, error) {
	to.inventory = to.inventory.Normalize(comp.GetNamespace())
	to.annotated, to.read = to.inventory, true
	// Writing the metadata changes nobody's membership.
	to.record = from.record
	// Unconfirmed until a write of the parent succeeds (see cacheTrusted).
	to.unconfirmed = from.unconfirmed
	id := applyset.ParentID(comp)
	tooling := "stencil/" + r.Options.Version
	gks, nss := to.inventory.Annotations()
	fromGKs, fromNSs := from.annotated.Annotations()
	if from.finalizer == to.finalizer && gks == fromGKs && nss == fromNSs && !applyset.NeedsRewrite(comp.GetAnnotations()) &&
		comp.GetLabels()[applyset.LabelApplySetID] == id && comp.GetAnnotations()[applyset.AnnotationTooling] == tooling {
		return to, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(comp.ParentGVK())
	u.SetNamespace(comp.GetNamespace())
	u.SetName(comp.GetName())
	u.SetLabels(map[string]string{applyset.LabelApplySetID: id})
	u.SetAnnotations(map[string]string{applyset.AnnotationTooling: tooling, applyset.AnnotationGroupKinds: gks, applyset.AnnotationNamespaces: nss})
	if to.finalizer {
		u.SetFinalizers([]string{Finalizer})
	}
	if from.unconfirmed {
		// Only over the version the pass read (see cacheTrusted).
		u.SetResourceVersion(comp.GetResourceVersion())
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		r.noteConflict(comp, from, err)
		return from, fmt.Errorf("write ApplySet metadata on %s: %w", applyset.Describe(comp), err)
	}
	if !to.finalizer {
		// The finalizer the mutating webhook adds on create is owned by
		// the parent's creator, so the apply, which only drops what
		// stencil owns, leaves it: remove it by name.
		if err := r.dropFinalizer(ctx, comp, u); err != nil {
			return from, fmt.Errorf("remove the finalizer of %s: %w", applyset.Describe(comp), err)
		}
	}
	r.parentVersions.Put(client.ObjectKeyFromObject(comp), "", u.GetResourceVersion())
	to.unconfirmed = false
	// What was written joins the Composition's other labels and annotations,
	// which templates read later in this pass.
	labels, annotations := maps.Clone(comp.GetLabels()), maps.Clone(comp.GetAnnotations())
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(labels, map[string]string{applyset.LabelApplySetID: id})
	maps.Copy(annotations, map[string]string{applyset.AnnotationTooling: tooling, applyset.AnnotationGroupKinds: gks, applyset.AnnotationNamespaces: nss})
	comp.SetLabels(labels)
	comp.SetAnnotations(annotations)
	return to, nil
}

// dropFinalizer removes stencil's finalizer from u, the parent as a write
// just returned it, when it is still there: a JSON patch that tests the
// entry it removes, so it never removes another finalizer.
func (r *CompositionReconciler) dropFinalizer(ctx context.Context, comp applyset.Parent, u *unstructured.Unstructured) error {
	i := slices.Index(u.GetFinalizers(), Finalizer)
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	patch, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": Finalizer}, {"op": "remove", "path": path}})
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch))
}

// fetch reads the parent key names from r's cache: a Composition, or an
// instance of r's published kind with its effective spec (see
// publish.InstanceSpec). It returns no parent when the instance's Bundle
// no longer publishes the kind: such instances are left alone. specErr is a
// stencil.dev/* annotation stencil cannot read: the instance comes with its
// Bundle's defaults, and a pass that does not delete it stalls.
func (r *CompositionReconciler) fetch(ctx context.Context, key types.NamespacedName) (p applyset.Parent, specErr, err error) {
	if r.kind == nil {
		comp := &v1alpha1.Composition{}
		if err := r.parents.Get(ctx, key, comp); err != nil {
			return nil, nil, err
		}
		return comp, nil, nil
	}
	u := instanceObject(r.kind.GVK)
	if err := r.parents.Get(ctx, key, u); err != nil {
		return nil, nil, err
	}
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.kind.Bundle}, b); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if b.Spec.API == nil || publish.GVK(publish.Defaulted(*b.Spec.API)) != r.kind.GVK {
		return nil, nil, nil
	}
	// With an error, spec holds the Bundle's defaults alone.
	spec, specErr := publish.InstanceSpec(b.Name, b.Spec.API, u)
	return applyset.NewInstance(u, spec), specErr, nil
}

// ensureParent reads the recorded applyset.Inventory and finalizer (see
// recordedParent). Nothing is written yet: widen writes the finalizer, the
// ApplySet id and tooling with the widened applyset.Inventory, in one patch, before
// anything is applied.
func (r *CompositionReconciler) ensureParent(ctx context.Context, s *scope) (ctrl.Result, error) {
	var err error
	s.parent, err = r.recordedParent(ctx, s.comp)
	return ctrl.Result{}, err
}

// widen records old ∪ new group-kinds and namespaces on the parent, with
// its finalizer, ApplySet id and tooling, before anything is applied, so a
// crash mid-apply leaves every member findable and the parent undeletable
// until its members are gone.
func (r *CompositionReconciler) widen(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	r.warnIgnored(s.comp, s.parent.ignored.Minus(s.plan.Inventory.Normalize(s.comp.GetNamespace())))
	var err error
	s.parent, err = r.writeParent(ctx, s.comp, s.parent, parentState{inventory: s.parent.inventory.Union(s.plan.Inventory), finalizer: true})
	return ctrl.Result{}, err
}

// consent is what lets the set of pass s adopt an existing object of no
// set (see applyset.Owns): the stencil.dev/adopt annotation naming the
// parent (its resource as the API server serves its kind), or a kind the
// rendered Bundle's spec.permissions.adopt lists (for a revision, within
// its Bundle's current one). It reads only the RESTMapper: no request.
func (r *CompositionReconciler) consent(_ context.Context, s *scope) applyset.Consent {
	return r.Consent(s.comp, s.plan)
}

// Consent is what lets parent's set adopt an existing object of no set
// (see applyset.Owns), as the controller applies planned, parent's plan:
// the admission webhook's dry runs use it too. It reads only the
// RESTMapper.
func (r *CompositionReconciler) Consent(parent applyset.Parent, planned *plan.Plan) applyset.Consent {
	resource := ""
	gvk := parent.ParentGVK()
	if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		resource = m.Resource.Resource
	}
	return applyset.ConsentOf(parent, resource, planned.Adopt)
}
