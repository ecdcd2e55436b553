package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/ownership"
	"github.com/stencil-dev/stencil/reconcile/parent"

	"github.com/stencil-dev/stencil/reconcile/status"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// Deletion: the members of a parent being deleted are deleted or
// orphaned, then its finalizer is dropped; prune orphans kept members
// through orphan too.

// finalizeRecheck is how often a deletion waiting on members looks again
// when it could not watch their kinds (and so would hear of no event).
const finalizeRecheck = 5 * time.Second

// finalize handles a Composition being deleted. With deletionPolicy Delete
// the members are deleted in reverse apply order, one rank at a time: the
// next rank is deleted only when the previous one is gone (each member's
// deletion event brings the next pass: every recorded kind is watched
// before anything is listed or deleted, see watchInventory). With Orphan,
// each member loses its part-of label and its owner reference to the
// parent, and stays; so does, under Delete, a member annotated
// helm.sh/resource-policy: keep. A member left in place labelled (one
// annotated stencil.dev/prune: disabled, one whose delete is forbidden,
// every member of a suspended Composition, which is otherwise let go at
// once) loses its owner reference: once the finalizer is dropped,
// Kubernetes' garbage collector finds no member of the parent it would
// delete but those stencil deletes itself (package ownership). The
// finalizer is dropped last.
//
// Members are listed from the API server, not the cache, so a deletion
// does not depend on watches (after a restart there are none until it
// starts them). A kind the controller may not list, and a member it (or the
// Composition's ServiceAccount) may not delete or relabel, is reported with
// a Warning event and left in place: RBAC never holds the finalizer
// forever. Any other failure to list or delete is retried.
func (r *Controller) finalize(ctx context.Context, s *scope) (ctrl.Result, error) {
	live, err := r.store.Read(ctx, s.comp)
	if err != nil || !live.Finalizer {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.store.Seed(ctx, s.comp, live); err != nil {
		return ctrl.Result{}, err
	}
	s.parent = live
	status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonDeleting, "deleting members")
	r.passes.Forget(client.ObjectKeyFromObject(s.comp))
	suspended := s.comp.ParentSpec().Suspend
	watched := suspended || r.watchInventory(ctx, live.Inventory)
	p := r.pruner(s)
	listed := p.List(ctx, live.Inventory, s.comp.GetNamespace())
	var forbidden []schema.GroupKind
	for _, f := range listed.Forbidden {
		forbidden = append(forbidden, f.GK)
		r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonForbidden, "Delete", "%s: its members are left in place",
			r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), "", f.GK, "list", f.Namespace))
	}
	if failed := slices.DeleteFunc(slices.Clone(listed.Unlisted), func(gk schema.GroupKind) bool { return slices.Contains(forbidden, gk) }); len(failed) > 0 {
		return ctrl.Result{}, fmt.Errorf("list members to delete: cannot list %v", failed)
	}
	members := slices.DeleteFunc(listed.Members, func(m applyset.Member) bool {
		return applyset.Owns(&m.Meta, m.GVK.GroupKind(), p.ID, live.Record, applyset.Consent{}) != applyset.Ours
	})
	rel := r.releaser(s)
	stay, members := split(members, func(m applyset.Member) bool { return suspended || !applyset.Owned(m, p.ID, live.Record) })
	if err := rel.Let(ctx, stay); err != nil || suspended {
		return r.dropFinalizer(ctx, s, live, err)
	}
	var waiting bool
	if s.comp.ParentSpec().DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
		err = rel.Orphan(ctx, members)
	} else if members, err = rel.OrphanKept(ctx, members); err == nil {
		waiting, err = r.deleteByRank(ctx, s, p, members)
	}
	if err != nil || waiting {
		if err == nil && !watched {
			return ctrl.Result{RequeueAfter: finalizeRecheck}, nil
		}
		return ctrl.Result{}, err
	}
	// Last, the set's store in the controller's namespace (package
	// generated), the controller's own state: deleted as the
	// controller, under either policy.
	switch err := valuestore.DeleteController(ctx, r.Client, r.APIReader, r.Options.Namespace, p.ID); {
	case apierrors.IsForbidden(err):
		r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonForbidden, "Delete", "%v: it is left in place", err)
	case err != nil:
		return ctrl.Result{}, err
	}
	return r.dropFinalizer(ctx, s, live, nil)
}

// dropFinalizer lets the parent go, unless err (returned) says a member
// could not be dealt with.
func (r *Controller) dropFinalizer(ctx context.Context, s *scope, live parent.State, err error) (ctrl.Result, error) {
	if err != nil {
		return ctrl.Result{}, err
	}
	_, err = r.store.Write(ctx, s.comp, live, parent.State{Inventory: live.Inventory, Finalizer: false})
	s.done = true
	name := types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}
	r.stalls.Forget(name)
	r.flaps.Forget(name)
	return ctrl.Result{}, err
}

// split returns the members in, and those not in, by in.
func split(members []applyset.Member, in func(applyset.Member) bool) (yes, no []applyset.Member) {
	for _, m := range members {
		if in(m) {
			yes = append(yes, m)
		} else {
			no = append(no, m)
		}
	}
	return yes, no
}

// deleteByRank deletes the members of the highest apply rank that still
// has members to wait on, and reports whether any is left to wait on. A
// member whose delete is forbidden is reported and left in place, so it
// does not hold back the lower ranks.
func (r *Controller) deleteByRank(ctx context.Context, s *scope, p *applyset.Pruner, members []applyset.Member) (bool, error) {
	var ranks []int
	for _, m := range members {
		ranks = append(ranks, plan.KindRank(m.GVK.Kind))
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	account := engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount)
	for i := len(ranks) - 1; i >= 0; i-- {
		var errs []string
		waiting := false
		for _, m := range members {
			if plan.KindRank(m.GVK.Kind) != ranks[i] {
				continue
			}
			if m.Meta.DeletionTimestamp != nil {
				waiting = true
				continue
			}
			_, err := p.DeleteMember(ctx, m)
			switch {
			case apierrors.IsForbidden(err):
				r.Recorder.Eventf(s.comp, m.Related(), "Warning", v1alpha1.ReasonForbidden, "Delete", "%s: %s is left in place",
					r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), account, m.GVK.GroupKind(), "delete", m.Meta.Namespace), m.Ref())
				if err := r.releaser(s).Let(ctx, []applyset.Member{m}); err != nil {
					errs = append(errs, err.Error())
				}
			case err != nil:
				errs = append(errs, err.Error())
			default:
				waiting = true
				metrics.Prunes.Inc()
				r.Recorder.Eventf(s.comp, m.Related(), "Normal", "Deleted", "Delete", "%s deleted", m.Ref())
			}
		}
		if len(errs) > 0 {
			return true, fmt.Errorf("delete members: %s", strings.Join(errs, "; "))
		}
		if waiting {
			return true, nil
		}
	}
	return false, nil
}

// watchInventory makes sure every recorded kind the API server serves is
// watched, and reports whether all are. It runs before the members are
// listed and deleted, so the deletion of each (at once, or later when
// finalizers of its own are released) raises an event that brings the
// next pass, even after a restart, when nothing is watched yet: a watch
// started after a delete would never hear of it. A kind that cannot be
// watched (the controller may not list or watch it, or its informer does
// not sync) is looked at again after finalizeRecheck.
func (r *Controller) watchInventory(ctx context.Context, inv applyset.Inventory) bool {
	all := true
	for _, gk := range inv.GroupKinds {
		m, err := r.Mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue // its CRD is gone, and with it every member of the kind
		}
		if err == nil {
			_, err = r.watches.Ensure(ctx, []schema.GroupVersionKind{m.GroupVersionKind})
		}
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("cannot watch the members being deleted: polling", "kind", applyset.FormatGroupKind(gk), "error", err)
			all = false
		}
	}
	return all
}

// releaser lets members of pass s's parent go, as its writer (package
// ownership).
func (r *Controller) releaser(s *scope) *ownership.Releaser {
	account := engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount)
	return &ownership.Releaser{Writer: s.writer, Parent: s.comp, ID: applyset.ParentID(s.comp), Recorder: r.Recorder,
		Denied: func(ctx context.Context, gk schema.GroupKind, ns string) error {
			return r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), account, gk, "patch", ns)
		}}
}
