package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// pruner finds and deletes the members of an ApplySet. Listing goes to the
// API server (lister), or, for the kinds cached says it holds, to the
// label-selected member cache (see cachedPruner for why that is safe);
// deleting goes through writer, which impersonates the Composition's
// ServiceAccount when it has one.
type pruner struct {
	lister client.Reader
	writer client.Client
	mapper meta.RESTMapper
	id     string
	// cached, when set, lists the members of a kind from the cache and
	// reports whether it could; nil lists everything live.
	cached func(ctx context.Context, gvk schema.GroupVersionKind, namespace string, id string) ([]member, bool)
}

// member is one live object found by its part-of label.
type member struct {
	gvk  schema.GroupVersionKind
	meta metav1.PartialObjectMetadata
	// cached: listed from the cache, so deleted only at the
	// resourceVersion listed (see deleteMember).
	cached bool
}

// listResult is what listing a recorded applyset.Inventory found.
type listResult struct {
	members []member
	// unlisted are the group-kinds that could not be listed (discovery or
	// list failed): they stay recorded, and nothing of them is pruned.
	unlisted []schema.GroupKind
	// gone are the group-kinds the API server no longer serves (their CRD
	// was deleted): nothing of them can exist, so they are dropped.
	gone []schema.GroupKind
	// forbidden are the group-kinds the controller may not list (in the
	// namespace named): also in unlisted.
	forbidden []kindIn
}

// kindIn is a group-kind in a namespace ("" for cluster-wide).
type kindIn struct {
	gk        schema.GroupKind
	namespace string
}

// list finds every live object labelled as a member of the set, over the
// recorded group-kinds and namespaces.
func (p *pruner) list(ctx context.Context, inv applyset.Inventory, parentNamespace string) listResult {
	var res listResult
	namespaces := append([]string{parentNamespace}, inv.Namespaces...)
	for _, gk := range inv.GroupKinds {
		mapping, err := p.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			res.gone = append(res.gone, gk)
			continue
		}
		if err != nil {
			res.unlisted = append(res.unlisted, gk)
			continue
		}
		scopes := namespaces
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			scopes = []string{""}
		}
		for _, ns := range scopes {
			if p.cached != nil {
				if members, ok := p.cached(ctx, mapping.GroupVersionKind, ns, p.id); ok {
					res.members = append(res.members, members...)
					continue
				}
			}
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(mapping.GroupVersionKind.Kind + "List"))
			err := p.lister.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{applyset.LabelPartOf: p.id})
			if err != nil {
				switch {
				case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
					res.gone = append(res.gone, gk)
				case apierrors.IsForbidden(err):
					res.forbidden = append(res.forbidden, kindIn{gk, ns})
					res.unlisted = append(res.unlisted, gk)
				default:
					res.unlisted = append(res.unlisted, gk)
				}
				break
			}
			for _, item := range list.Items {
				res.members = append(res.members, member{gvk: mapping.GroupVersionKind, meta: item})
			}
		}
	}
	res.unlisted = slices.Compact(res.unlisted)
	return res
}

// pruner returns the pruner of a Composition's set: it lists as the
// controller, live, and deletes as the Composition's writer. Finalizing
// uses it: the finalizer goes only once a live listing finds nothing.
func (r *CompositionReconciler) pruner(s *scope) *pruner {
	return &pruner{lister: r.APIReader, writer: s.writer, mapper: r.Mapper,
		id: applyset.ParentID(s.comp)}
}

// cachedPruner is pruner listing, for the kinds whose watch has synced,
// from the label-selected member cache: the prune check of a pass costs no
// request. That is safe because of what each way of being wrong does:
//
//   - The cache may lack a member created a moment ago. It is not pruned
//     this pass; it stays recorded because shrinking the record is
//     confirmed live first (see confirmDrops), and its arrival in the
//     cache brings the next pass, which prunes it.
//   - The cache may hold a member that has since changed (its part-of
//     label removed: orphaned by hand) or gone. Deleting one listed from
//     the cache carries both its UID and its resourceVersion as
//     preconditions, so only the object exactly as listed (labelled a
//     member, managed by stencil) is ever deleted; any change since is a
//     conflict, kept recorded and looked at again on the next pass.
func (r *CompositionReconciler) cachedPruner(s *scope) *pruner {
	p := r.pruner(s)
	p.cached = r.cachedMembers
	return p
}

// cachedMembers lists the members of one kind in one namespace ("" for
// all) from the cache, when the kind's watch has synced.
func (r *CompositionReconciler) cachedMembers(ctx context.Context, gvk schema.GroupVersionKind, namespace, id string) ([]member, bool) {
	e, ok := r.watched.Load(gvk)
	if !ok || !e.(*watchEntry).synced.Load() {
		return nil, false
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	ctx, cancel := context.WithTimeout(ctx, cacheReadTimeout)
	defer cancel()
	if err := r.Cache.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{indexPartOf: id}); err != nil {
		return nil, false
	}
	out := make([]member, 0, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		m := member{gvk: gvk, cached: true}
		m.meta.SetGroupVersionKind(gvk)
		m.meta.SetNamespace(u.GetNamespace())
		m.meta.SetName(u.GetName())
		m.meta.SetUID(u.GetUID())
		m.meta.SetResourceVersion(u.GetResourceVersion())
		m.meta.SetLabels(u.GetLabels())
		m.meta.SetAnnotations(u.GetAnnotations())
		m.meta.SetManagedFields(u.GetManagedFields())
		m.meta.SetDeletionTimestamp(u.GetDeletionTimestamp())
		m.meta.SetFinalizers(u.GetFinalizers())
		out = append(out, m)
	}
	return out, true
}

// confirmDrops checks, live, a shrinking of the recorded applyset.Inventory from
// recorded to remaining that a cached listing decided: every member a live
// listing of the recorded applyset.Inventory finds, other than those deleted this
// pass, keeps its kind and namespace recorded. A member the cache did not
// hold yet is never lost from the record, so it stays findable.
func (r *CompositionReconciler) confirmDrops(ctx context.Context, s *scope, recorded, remaining applyset.Inventory, deleted map[types.UID]bool) applyset.Inventory {
	rg, rn := recorded.Normalize(s.comp.GetNamespace()).Annotations()
	mg, mn := remaining.Normalize(s.comp.GetNamespace()).Annotations()
	if rg == mg && rn == mn {
		return remaining
	}
	listed := r.pruner(s).list(ctx, recorded, s.comp.GetNamespace())
	if len(listed.unlisted) > 0 {
		// What could not be listed stays recorded, wherever it may be.
		remaining = remaining.Union(applyset.Inventory{GroupKinds: listed.unlisted, Namespaces: recorded.Namespaces})
	}
	for _, m := range listed.members {
		if !deleted[m.meta.UID] {
			remaining = remaining.Union(memberInventory(m))
		}
	}
	return remaining
}

// AnnotationAllowEmptyRender set to "true" on a Composition or on its
// Bundle lets a render of no objects prune every member of the set.
const AnnotationAllowEmptyRender = "stencil.dev/allow-empty-render"

// guardEmptyRender keeps a render of zero objects from pruning the whole
// set: when the set still has members, the Composition is Stalled with
// reason EmptyRender and nothing is pruned, unless the Composition or its
// Bundle is annotated stencil.dev/allow-empty-render: "true". A bundle
// whose templates all sit behind a condition, values that switch
// everything off by mistake, or a Bundle emptied in an edit would otherwise
// delete every member at once.
func (r *CompositionReconciler) guardEmptyRender(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.plan.Objects) > 0 || s.comp.ParentSpec().Suspend || (s.comp.ParentSpec().Prune != nil && !*s.comp.ParentSpec().Prune) ||
		len(s.parent.inventory.GroupKinds) == 0 || s.comp.GetAnnotations()[AnnotationAllowEmptyRender] == "true" {
		return ctrl.Result{}, nil
	}
	bundle := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.comp.ParentSpec().Bundle}, bundle); err != nil {
		return ctrl.Result{}, fmt.Errorf("read Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	if bundle.Annotations[AnnotationAllowEmptyRender] == "true" {
		return ctrl.Result{}, nil
	}
	listed := r.cachedPruner(s).list(ctx, s.parent.inventory, s.comp.GetNamespace())
	var names []string
	for _, m := range listed.members {
		if owned(m) && m.meta.DeletionTimestamp == nil {
			names = append(names, m.Ref())
		}
	}
	if len(names) == 0 && len(listed.unlisted) == 0 {
		return ctrl.Result{}, nil
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	msg := fmt.Sprintf("the Bundle rendered no objects while the set still has members (%s): nothing is pruned; "+
		"to delete them all, annotate the Composition or the Bundle %s: \"true\"", strings.Join(names, ", "), AnnotationAllowEmptyRender)
	if len(names) == 0 {
		msg = fmt.Sprintf("the Bundle rendered no objects and the set's recorded kinds %v could not be listed: nothing is pruned", listed.unlisted)
	}
	setStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonEmptyRender, msg)
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonEmptyRender, "Prune", "%s", msg)
	s.done = true
	return ctrl.Result{}, nil
}

// prunable reports whether a listed member may be deleted: not just applied,
// not already going, and owned.
func prunable(m member, keep map[types.UID]bool) bool {
	return !keep[m.meta.UID] && m.meta.DeletionTimestamp == nil && owned(m)
}

// owned reports whether stencil may delete a member at all: it is managed
// by stencil's field manager (another controller may have copied our label
// onto its own object) and not opted out with stencil.dev/prune: disabled.
func owned(m member) bool {
	return m.meta.Annotations[applyset.AnnotationPrune] != "disabled" &&
		slices.ContainsFunc(m.meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
			return f.Manager == FieldManager
		})
}

// deleteMember deletes one member with a UID precondition, so an object
// recreated under the same name since it was listed is never deleted, and
// for a member listed from the cache a resourceVersion one too. A 404
// (already gone) is success; a 409 (replaced) reports conflict so the caller
// keeps its group-kind recorded and retries on the next pass.
func (p *pruner) deleteMember(ctx context.Context, m member) (conflict bool, err error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.gvk)
	obj.SetNamespace(m.meta.Namespace)
	obj.SetName(m.meta.Name)
	pre := client.Preconditions{UID: &m.meta.UID}
	if m.cached {
		version := m.meta.ResourceVersion
		pre.ResourceVersion = &version
	}
	err = p.writer.Delete(ctx, obj, pre, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil
	default:
		return false, fmt.Errorf("delete %s %s/%s: %w", m.gvk.Kind, m.meta.Namespace, m.meta.Name, err)
	}
}

// memberRef names a member as Kind/namespace/name.
func (m member) Ref() string {
	if m.meta.Namespace == "" {
		return m.gvk.Kind + "/" + m.meta.Name
	}
	return m.gvk.Kind + "/" + m.meta.Namespace + "/" + m.meta.Name
}

// plannedHooks returns the keys (see plan.ObjectKey) of the hooks in the plan.
func plannedHooks(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, u := range objs {
		if plan.IsHook(u) {
			out[plan.ObjectKey(u)] = true
		}
	}
	return out
}

// spare reports whether prune must leave a hook alone: a hook the render
// still holds (whether or not it runs this revision; Helm, too, leaves
// hook objects in place), or one that is still running. It stays recorded
// in the inventory.
func (r *CompositionReconciler) spare(ctx context.Context, s *scope, m member, planned map[string]bool) (bool, error) {
	return spareHook(ctx, r.APIReader, m, planned)
}

// spareHook is spare, reading the hook live through reader; `stencil diff`
// asks it too, so what it says would be pruned is what prune deletes.
func spareHook(ctx context.Context, reader client.Reader, m member, planned map[string]bool) (bool, error) {
	if !plan.IsHook(&m.meta) || m.meta.DeletionTimestamp != nil {
		return false, nil
	}
	if planned[m.gvk.Group+"/"+m.gvk.Kind+"/"+m.meta.Namespace+"/"+m.meta.Name] {
		return true, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(m.gvk)
	err := reader.Get(ctx, client.ObjectKey{Namespace: m.meta.Namespace, Name: m.meta.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return true, fmt.Errorf("read hook %s: %w", m.Ref(), err)
	}
	outcome, _ := plan.OutcomeOf(live)
	return outcome == plan.HookRunning && live.GetUID() == m.meta.UID, nil
}
