package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/prune"
	"github.com/stencil-dev/stencil/reconcile/status"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// What prune and finalize delete members with: the pruners of a pass,
// live or cached, the live confirmation of a shrinking record, the guard
// against an empty render, the sparing of hooks and the budget.

// pruner returns the pruner of a Composition's set: it lists as the
// controller, live, and deletes as the Composition's writer. Finalizing
// uses it: the finalizer goes only once a live listing finds nothing.
func (r *Controller) pruner(s *scope) *applyset.Pruner {
	return &applyset.Pruner{Lister: r.APIReader, Writer: s.writer, Mapper: r.Mapper,
		ID: applyset.ParentID(s.comp)}
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
func (r *Controller) cachedPruner(s *scope) *applyset.Pruner {
	p := r.pruner(s)
	p.Cached = r.watches.Members
	return p
}

// confirmDrops checks, live, a shrinking of the recorded applyset.Inventory from
// recorded to remaining that a cached listing (cached) decided: every member a live
// listing of the recorded applyset.Inventory finds, other than those deleted this
// pass, keeps its kind and namespace recorded. A member the cache did not
// hold yet is never lost from the record, so it stays findable.
//
// The same live listing settles the record of members (see forget): a
// recorded member that cached did not find, or that the pass deleted,
// is forgotten once the live listing does not find it either. When
// neither the inventory shrinks nor any recorded member went unseen (a
// converged set), nothing is read.
func (r *Controller) confirmDrops(ctx context.Context, s *scope, recorded, remaining applyset.Inventory, deleted map[types.UID]bool, cached applyset.ListResult) applyset.Inventory {
	rg, rn := recorded.Normalize(s.comp.GetNamespace()).Annotations()
	mg, mn := remaining.Normalize(s.comp.GetNamespace()).Annotations()
	unseen := prune.Unseen(s.parent.Record, cached, prune.Applied(s.results), deleted)
	if rg == mg && rn == mn && len(unseen) == 0 {
		return remaining
	}
	listed := r.pruner(s).List(ctx, recorded, s.comp.GetNamespace())
	if len(listed.Unlisted) > 0 {
		// What could not be listed stays recorded, wherever it may be.
		remaining = remaining.Union(applyset.Inventory{GroupKinds: listed.Unlisted, Namespaces: recorded.Namespaces})
	}
	for _, m := range listed.Members {
		if !deleted[m.Meta.UID] {
			remaining = remaining.Union(memberInventory(m))
		}
	}
	prune.Forget(s.parent.Record, unseen, listed)
	return remaining
}

// recordSlack is how many members beyond twice the render the record of
// a set that does not prune may hold before boundRecord settles it.
const recordSlack = 64

// boundRecord keeps the record of a set that does not prune (spec.prune:
// false, so no prune listing to settle it with, see confirmDrops)
// bounded: once it holds more than twice the render's objects (and
// recordSlack), the members a listing no longer finds (deleted by
// someone, and made again under a new UID) are forgotten, as confirmDrops
// would. Below that, nothing is listed.
func (r *Controller) boundRecord(ctx context.Context, s *scope) {
	if len(s.parent.Record.UIDs()) <= 2*len(s.plan.Objects)+recordSlack {
		return
	}
	cached := r.cachedPruner(s).List(ctx, s.parent.Inventory, s.comp.GetNamespace())
	r.confirmDrops(ctx, s, s.parent.Inventory, s.parent.Inventory, nil, cached)
}

// guardEmptyRender keeps a render of zero objects from pruning the whole
// set: when the set still has members, the Composition is Stalled with
// reason EmptyRender and nothing is pruned, unless the Composition or its
// Bundle is annotated stencil.dev/allow-empty-render: "true". A bundle
// whose templates all sit behind a condition, values that switch
// everything off by mistake, or a Bundle emptied in an edit would otherwise
// delete every member at once.
func (r *Controller) guardEmptyRender(ctx context.Context, s *scope) (ctrl.Result, error) {
	// Objects held back (stencil.dev/wait-for) are rendered, only not yet
	// applied: a render holding them back is not empty.
	if len(s.plan.Objects) > 0 || s.observed != nil && len(s.observed.Held) > 0 || s.comp.ParentSpec().Suspend || (s.comp.ParentSpec().Prune != nil && !*s.comp.ParentSpec().Prune) ||
		len(s.parent.Inventory.GroupKinds) == 0 || s.comp.GetAnnotations()[v1alpha1.AnnotationAllowEmptyRender] == "true" {
		return ctrl.Result{}, nil
	}
	bundle := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.comp.ParentSpec().Bundle}, bundle); err != nil {
		return ctrl.Result{}, fmt.Errorf("read Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	if bundle.Annotations[v1alpha1.AnnotationAllowEmptyRender] == "true" {
		return ctrl.Result{}, nil
	}
	p := r.cachedPruner(s)
	listed := p.List(ctx, s.parent.Inventory, s.comp.GetNamespace())
	var names []string
	for _, m := range listed.Members {
		if applyset.Owned(m, p.ID, s.parent.Record) && m.Meta.DeletionTimestamp == nil {
			names = append(names, m.Ref())
		}
	}
	if len(names) == 0 && len(listed.Unlisted) == 0 {
		return ctrl.Result{}, nil
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	msg := fmt.Sprintf("the Bundle rendered no objects while the set still has members (%s): nothing is pruned; "+
		"to delete them all, annotate the Composition or the Bundle %s: \"true\"", strings.Join(names, ", "), v1alpha1.AnnotationAllowEmptyRender)
	if len(names) == 0 {
		msg = fmt.Sprintf("the Bundle rendered no objects and the set's recorded kinds %v could not be listed: nothing is pruned", listed.Unlisted)
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonEmptyRender, msg)
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonEmptyRender, "Prune", "%s", msg)
	s.done = true
	return ctrl.Result{}, nil
}

// sparedHooks are the UIDs of the listed hooks prune leaves alone (see
// prune.SpareHook: the render still holds them, or they still run), read
// live as the controller; a hook that cannot be read is spared, with its
// error.
func (r *Controller) sparedHooks(ctx context.Context, s *scope, listed []applyset.Member) (map[types.UID]bool, []string) {
	planned := prune.PlannedHooks(s.plan.Objects)
	spared := map[types.UID]bool{}
	var errs []string
	for _, m := range listed {
		spare, err := prune.SpareHook(ctx, r.APIReader, m, planned)
		if err != nil {
			errs = append(errs, err.Error())
		}
		if spare || err != nil {
			spared[m.Meta.UID] = true
		}
	}
	return spared, errs
}

// delete deletes doomed as the parent's writer, each with its UID and
// resourceVersion as preconditions, and returns the UIDs deleted, the
// errors, and the first denial (a Forbidden delete: the parent stalls,
// the member stays recorded); keep is told of every member that
// stays recorded.
func (r *Controller) delete(ctx context.Context, s *scope, p *applyset.Pruner, doomed []applyset.Member, keep func(applyset.Member)) (map[types.UID]bool, []string, error) {
	deleted := map[types.UID]bool{}
	var denied error
	var errs []string
	for _, m := range doomed {
		conflict, err := p.DeleteMember(ctx, m)
		switch {
		case apierrors.IsForbidden(err):
			if denied == nil {
				denied = r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount), m.GVK.GroupKind(), "delete", m.Meta.Namespace)
			}
			keep(m)
		case err != nil:
			errs = append(errs, err.Error())
			keep(m)
		case conflict:
			keep(m)
		default:
			deleted[m.Meta.UID] = true
			metrics.Prunes.Inc()
			s.events.Prune(m)
		}
	}
	return deleted, errs, denied
}

// withinBudget reports whether the pass may prune doomed, the members it
// would delete: at most the Bundle's prune budget of the set (its
// spec.pruning.budget, else prune.DefaultPruneBudget; at least one
// member) and no member of a protected kind (PersistentVolumeClaim,
// PersistentVolume, Namespace, CustomResourceDefinition) its
// spec.pruning.allowDelete does not list. When not, the parent is Stalled
// (reason PruneBlocked) and a Warning event names what the pass would
// have deleted; nothing is pruned until the parent or its Bundle is
// annotated stencil.dev/allow-prune: "true", or the Bundle's policy or
// the render changes. An empty render the annotation
// stencil.dev/allow-empty-render let through is not held to the count. A template that renames half a set, or drops a
// volume claim, stops there. Orphaning (helm.sh/resource-policy: keep)
// deletes nothing and is not counted.
func (r *Controller) withinBudget(ctx context.Context, s *scope, doomed []applyset.Member) (bool, error) {
	if len(doomed) == 0 {
		return true, nil
	}
	bundle := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.comp.ParentSpec().Bundle}, bundle); err != nil {
		return false, fmt.Errorf("read Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	budget := prune.BudgetOf(bundle.Spec.Pruning)
	budget.Unlimited = s.comp.GetAnnotations()[v1alpha1.AnnotationAllowPrune] == "true" || bundle.Annotations[v1alpha1.AnnotationAllowPrune] == "true"
	rendered := len(plan.OrdinaryObjects(s.plan.Objects))
	if rendered == 0 {
		// An empty render prunes only where stencil.dev/allow-empty-render
		// consented to deleting the whole set (see guardEmptyRender): no
		// count holds it back, a protected kind still does.
		all := intstr.FromString("100%")
		budget.Max = &all
	}
	// A store of generated values a pass emptied (its values kept
	// elsewhere first: package valuestore) is stencil's own, not counted.
	counted := slices.DeleteFunc(slices.Clone(doomed), func(m applyset.Member) bool {
		return valuestore.IsStore(&m.Meta) && m.Meta.Name == valuestore.Name(s.plan.ID)
	})
	err := budget.Check(counted, rendered+len(counted))
	if err == nil {
		return true, nil
	}
	metrics.PrunesBlocked.Inc()
	status.SetStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonPruneBlocked, err.Error())
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonPruneBlocked, "Prune", "%s", err.Error())
	s.done = true
	return false, nil
}
