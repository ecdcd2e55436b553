package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// finalize handles a Composition being deleted. With deletionPolicy Delete
// the members are deleted in reverse apply order, one rank at a time: the
// next rank is deleted only when the previous one is gone (each member's
// deletion event brings the next pass). With Orphan, each member loses its
// part-of label and stays. A suspended Composition is let go at once and its
// members are left as they are. The finalizer is dropped last.
func (r *CompositionReconciler) finalize(ctx context.Context, s *scope) (ctrl.Result, error) {
	live, err := r.readParent(ctx, s.comp)
	if err != nil || !live.finalizer {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.parent = live
	setReconciling(&s.status, s.comp.Generation, ReasonDeleting, "deleting members")
	if !s.comp.Spec.Suspend {
		p := &pruner{lister: r.APIReader, writer: s.writer, mapper: r.Mapper, id: ApplySetID(s.comp.Name, s.comp.Namespace, CompositionGroupKind)}
		listed := p.list(ctx, live.inventory, s.comp.Namespace)
		if len(listed.unlisted) > 0 {
			return ctrl.Result{}, fmt.Errorf("list members to delete: cannot list %v", listed.unlisted)
		}
		members := slices.DeleteFunc(listed.members, func(m member) bool { return !owned(m) })
		var waiting bool
		if s.comp.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
			err = r.orphan(ctx, s, members)
		} else {
			waiting, err = r.deleteHighestRank(ctx, s, p, members)
		}
		if err != nil || waiting {
			return ctrl.Result{}, err
		}
	}
	_, err = r.writeParent(ctx, s.comp, live, parentState{inventory: live.inventory, finalizer: false})
	s.done = true
	return ctrl.Result{}, err
}

// deleteHighestRank deletes the members of the highest remaining apply rank
// and reports whether any member remains (to wait for).
func (r *CompositionReconciler) deleteHighestRank(ctx context.Context, s *scope, p *pruner, members []member) (bool, error) {
	if len(members) == 0 {
		return false, nil
	}
	top := -1
	for _, m := range members {
		top = max(top, kindRank(m.gvk.Kind))
	}
	var errs []string
	for _, m := range members {
		if kindRank(m.gvk.Kind) != top || m.meta.DeletionTimestamp != nil {
			continue
		}
		if _, err := p.deleteMember(ctx, m); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		prunesTotal.Inc()
		r.Recorder.Eventf(s.comp, nil, "Normal", "Deleted", "Delete", "%s deleted", m.ref())
	}
	if len(errs) > 0 {
		return true, fmt.Errorf("delete members: %s", strings.Join(errs, "; "))
	}
	return true, nil
}

// orphan removes the part-of label from every member, leaving it in place.
func (r *CompositionReconciler) orphan(ctx context.Context, s *scope, members []member) error {
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+LabelPartOf+`":null}}}`))
	for _, m := range members {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(m.gvk)
		obj.SetNamespace(m.meta.Namespace)
		obj.SetName(m.meta.Name)
		if err := s.writer.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("orphan %s: %w", m.ref(), err)
		}
		r.Recorder.Eventf(s.comp, nil, "Normal", "Orphaned", "Delete", "%s orphaned", m.ref())
	}
	return nil
}
