package parent

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// WriteStatus patches p's status to st (a merge patch from what p holds),
// and keeps st as p's status. With lock, the patch carries p's
// resourceVersion as a precondition (a conflict when p changed since).
func WriteStatus(ctx context.Context, c client.Client, p applyset.Parent, st v1alpha1.CompositionStatus, lock bool) error {
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
		// The patch is of the wrapped object; orig is a copy of it.
		u := p.Unstructured
		orig := u.DeepCopy()
		u.Object["status"] = content
		*p.ParentStatus() = st
		return c.Status().Patch(ctx, u, client.MergeFromWithOptions(orig, opts...))
	}
	return fmt.Errorf("unknown kind of parent %T", p)
}

// State is the ApplySet metadata stencil keeps on a parent, as a pass read
// and wrote it.
type State struct {
	// inventory is what prune and deletion act on (see applyset.Recorded).
	Inventory applyset.Inventory
	Finalizer bool
	// annotated is the inventory the parent's annotations name, as Read:
	// when it differs from inventory, writeParent rewrites them.
	Annotated applyset.Inventory
	// Read: the state was read from the parent (it is what the status
	// records as status.Inventory).
	Read bool
	// Unconfirmed: read from a cached parent this process had neither
	// written nor read live (see cacheTrusted); the pass's writes of the
	// parent are made only at its resourceVersion.
	Unconfirmed bool
	// ignored is what the annotations, as read live, name beyond the
	// record (see applyset.Recorded), for warnIgnored.
	Ignored applyset.Inventory
	// record is the set's record of its members (see applyset.Record):
	// read with the inventory, added to as the pass applies, written
	// with its status (see inventoryRecord).
	Record *applyset.Record
}

// Read reads the parent's recorded applyset.Inventory and finalizer
// from the API server: never from the cache, which may not have seen the
// last widening yet.
func (p *Store) Read(ctx context.Context, comp applyset.Parent) (State, error) {
	live, err := applyset.Reread(ctx, p.Live, comp)
	if err != nil {
		return State{}, fmt.Errorf("read %s: %w", applyset.Describe(comp), err)
	}
	p.versions.Put(client.ObjectKeyFromObject(comp), "", live.GetResourceVersion())
	st := stateOf(comp, live)
	p.WarnIgnored(comp, st.Ignored)
	return st, nil
}

// Seed makes the record of a parent an earlier stencil reconciled, which
// has none (see applyset.RecordOf), from a live listing of its inventory
// as the controller (applyset.SeedRecord): once, the pass's record
// written with its status then holds it. recordedParent seeds what it
// reads; a pass that reads with readParent seeds before it acts.
func (p *Store) Seed(ctx context.Context, comp applyset.Parent, st State) error {
	return applyset.SeedRecord(ctx, p.Live, p.Mapper, comp, st.Inventory, st.Record)
}

// Recorded returns the parent's recorded applyset.Inventory and Finalizer:
// from comp, the cached parent, when the cache can be trusted with it
// (cacheTrusted), and live (readParent) otherwise. After anyone else's
// write of a parent stencil recorded, the first pass reads live: the whole
// parent, whose status then replaces comp's, so that the status written
// at the end of the pass is compared with what the API server holds, not
// with a cached status that lags behind stencil's last write (which would
// send the same status again).
func (p *Store) Recorded(ctx context.Context, comp applyset.Parent) (State, error) {
	if trusted, unconfirmed := p.cacheTrusted(comp); trusted {
		inv, _ := applyset.Recorded(comp)
		st := State{Inventory: inv, Finalizer: slices.Contains(comp.GetFinalizers(), v1alpha1.Finalizer),
			Annotated: applyset.ParseInventory(comp.GetAnnotations()).Normalize(comp.GetNamespace()), Read: true,
			Unconfirmed: unconfirmed, Record: applyset.RecordOf(comp)}
		return st, p.Seed(ctx, comp, st)
	}
	live, err := applyset.Reread(ctx, p.Live, comp)
	if err != nil {
		return State{}, fmt.Errorf("read %s: %w", applyset.Describe(comp), err)
	}
	p.versions.Put(client.ObjectKeyFromObject(comp), "", live.GetResourceVersion())
	AdoptStatus(comp, live)
	st := stateOf(comp, live)
	return st, p.Seed(ctx, comp, st)
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
//     parent just created. The pass is then Unconfirmed: its writes of the
//     parent carry comp's resourceVersion as a precondition (see
//     writeParent, writeStatus), so that a newer version, one a lagging
//     cache has not seen, fails them and the next pass reads live.
func (p *Store) cacheTrusted(comp applyset.Parent) (trusted, unconfirmed bool) {
	v := comp.GetResourceVersion()
	if v == "" {
		return false, false
	}
	known, ok := p.versions.Get(client.ObjectKeyFromObject(comp), "")
	if ok {
		return known == v, false
	}
	if NeverReconciled(comp) {
		return true, true
	}
	return false, false
}

// NeverReconciled reports whether p's status is empty: no stencil process
// wrote it (only the controller writes a parent's status, and every
// status it writes has at least an inventory record).
func NeverReconciled(p applyset.Parent) bool {
	return equality.Semantic.DeepEqual(*p.ParentStatus(), v1alpha1.CompositionStatus{})
}

// NoteConflict makes the next pass of comp read it live when err is a
// conflict of an unconfirmed pass's write (see cacheTrusted).
func (p *Store) NoteConflict(comp applyset.Parent, st State, err error) {
	if st.Unconfirmed && apierrors.IsConflict(err) {
		p.versions.Put(client.ObjectKeyFromObject(comp), "", unconfirmedVersion)
	}
}

// AdoptStatus makes live's status comp's: the status it holds, as the
// base of the next status write.
func AdoptStatus(comp, live applyset.Parent) {
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
func stateOf(comp, live applyset.Parent) State {
	inv, ignored := applyset.Recorded(live)
	return State{
		Inventory: inv,
		Finalizer: slices.Contains(live.GetFinalizers(), v1alpha1.Finalizer),
		Annotated: applyset.ParseInventory(live.GetAnnotations()).Normalize(comp.GetNamespace()),
		Read:      true,
		Ignored:   ignored,
		Record:    applyset.RecordOf(live),
	}
}

// WarnIgnored records a Warning event naming what the annotations of comp
// name beyond stencil's record (ignored). A parent never reconciled has
// no Record: its annotations, admission's (see package admission), are
// not warned of; widen warns only of what the pass's render does not
// hold, since admission widens the annotations with a render's kinds
// before the pass records them.
func (p *Store) WarnIgnored(comp applyset.Parent, ignored applyset.Inventory) {
	if ignored.Empty() || NeverReconciled(comp) {
		return
	}
	gks, nss := ignored.Annotations()
	p.Recorder.Eventf(comp, nil, "Warning", "InventoryIgnored", "Prune",
		"the ApplySet annotations name group-kinds [%s] and namespaces [%s] that stencil never recorded: they are ignored (never listed, pruned or deleted from)", gks, nss)
}

// inventoryRecord is the status.Inventory a pass writes: the inventory it
// read and wrote (s.parent) with the record of its members, or, when it
// read none, the record comp holds. A parent never reconciled gets an
// empty record, members included, so that its annotations are never taken
// for an earlier version's record, nor its labelled objects for members
// (see applyset.Recorded, applyset.RecordOf).
func InventoryRecord(comp applyset.Parent, st State) *v1alpha1.InventoryStatus {
	if st.Read {
		out := st.Inventory.Normalize(comp.GetNamespace()).Status()
		out.Members = st.Record.Status()
		if st.Record == nil && comp.ParentStatus().Inventory != nil {
			out.Members = comp.ParentStatus().Inventory.Members.DeepCopy()
		}
		return out
	}
	if st := comp.ParentStatus(); st.Inventory != nil || st.ObservedGeneration > 0 || len(st.Conditions) > 0 {
		return st.Inventory.DeepCopy()
	}
	return &v1alpha1.InventoryStatus{Members: &v1alpha1.MemberRecord{}}
}

// Write server-side-applies the ApplySet metadata (id label, tooling,
// group-kinds and namespaces annotations, finalizer) to the Composition, when
// it differs from what was read (from: its annotations as read, which may
// name more than its inventory, see applyset.Recorded). It returns the new
// state.
func (p *Store) Write(ctx context.Context, comp applyset.Parent, from, to State) (State, error) {
	to.Inventory = to.Inventory.Normalize(comp.GetNamespace())
	to.Annotated, to.Read = to.Inventory, true
	// Writing the metadata changes nobody's membership.
	to.Record = from.Record
	// Unconfirmed until a write of the parent succeeds (see cacheTrusted).
	to.Unconfirmed = from.Unconfirmed
	id := applyset.ParentID(comp)
	tooling := "stencil/" + p.Tooling
	gks, nss := to.Inventory.Annotations()
	fromGKs, fromNSs := from.Annotated.Annotations()
	if from.Finalizer == to.Finalizer && gks == fromGKs && nss == fromNSs && !applyset.NeedsRewrite(comp.GetAnnotations()) &&
		comp.GetLabels()[applyset.LabelApplySetID] == id && comp.GetAnnotations()[applyset.AnnotationTooling] == tooling {
		return to, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(comp.ParentGVK())
	u.SetNamespace(comp.GetNamespace())
	u.SetName(comp.GetName())
	u.SetLabels(map[string]string{applyset.LabelApplySetID: id})
	u.SetAnnotations(map[string]string{applyset.AnnotationTooling: tooling, applyset.AnnotationGroupKinds: gks, applyset.AnnotationNamespaces: nss})
	if to.Finalizer {
		u.SetFinalizers([]string{v1alpha1.Finalizer})
	}
	if from.Unconfirmed {
		// Only over the version the pass read (see cacheTrusted).
		u.SetResourceVersion(comp.GetResourceVersion())
	}
	if err := p.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		p.NoteConflict(comp, from, err)
		return from, fmt.Errorf("write ApplySet metadata on %s: %w", applyset.Describe(comp), err)
	}
	if !to.Finalizer {
		// The finalizer the mutating webhook adds on create is owned by
		// the parent's creator, so the apply, which only drops what
		// stencil owns, leaves it: remove it by name.
		if err := p.dropFinalizer(ctx, comp, u); err != nil {
			return from, fmt.Errorf("remove the finalizer of %s: %w", applyset.Describe(comp), err)
		}
	}
	p.versions.Put(client.ObjectKeyFromObject(comp), "", u.GetResourceVersion())
	to.Unconfirmed = false
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
func (p *Store) dropFinalizer(ctx context.Context, comp applyset.Parent, u *unstructured.Unstructured) error {
	i := slices.Index(u.GetFinalizers(), v1alpha1.Finalizer)
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	patch, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": v1alpha1.Finalizer}, {"op": "remove", "path": path}})
	if err != nil {
		return err
	}
	return p.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch))
}
