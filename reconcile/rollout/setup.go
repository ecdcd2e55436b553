package rollout

import (
	"context"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Coalesce is how long the notices of parents' changes gather before the
// rollout of their Bundle is looked at again: a wave of a thousand parents
// turning Ready costs a pass (and at most a status write) per Coalesce,
// not one per parent.
const Coalesce = time.Second

// Notifier carries notices of the parents' changes that the rollout
// controller does not watch itself (instances of published kinds, whose
// caches the kinds' controllers hold) to it. A notice that finds the
// channel full is dropped: a rollout under way looks again within
// recheck anyway.
type Notifier struct {
	ch chan event.GenericEvent
}

// NewNotifier returns a Notifier.
func NewNotifier() *Notifier { return &Notifier{ch: make(chan event.GenericEvent, 4096)} }

// Notify notes a change of a parent of Bundle bundle.
func (n *Notifier) Notify(bundle string) {
	if n == nil {
		return
	}
	select {
	case n.ch <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: bundle}}}:
	default:
	}
}

// Notable reports whether a parent's change from old to new may change
// its Bundle's rollout: its pin, suspension, deletion, generation,
// labels, the revision it is on, its readiness, a stall, its outputs.
func Notable(old, new applyset.Parent) bool {
	a, b := FromParent(old), FromParent(new)
	if a.Pin != b.Pin || a.Suspended != b.Suspended || a.Deleting != b.Deleting || a.Generation != b.Generation ||
		!maps.Equal(a.Labels, b.Labels) || a.Status.BundleRevision != b.Status.BundleRevision ||
		a.Status.ObservedGeneration != b.Status.ObservedGeneration {
		return true
	}
	for _, t := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionStalled} {
		ca, cb := meta.FindStatusCondition(a.Status.Conditions, t), meta.FindStatusCondition(b.Status.Conditions, t)
		if (ca == nil) != (cb == nil) || ca != nil && (ca.Status != cb.Status || ca.Reason != cb.Reason) {
			return true
		}
	}
	return !equality.Semantic.DeepEqual(a.Status.Outputs, b.Status.Outputs)
}

// SetupWithManager registers the rollout controller of shard: it watches
// Bundles, their revisions and the shard's Compositions (through the
// manager's cache), and n's notices of the instances of published kinds.
func SetupWithManager(mgr ctrl.Manager, r *Reconciler, n *Notifier) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("stencil")
	}
	bundleOf := func(name string) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Bundle{}).
		Watches(&v1alpha1.BundleRevision{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.AddAfter(bundleOf(e.Object.(*v1alpha1.BundleRevision).Spec.Bundle)[0], Coalesce)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if rev, ok := e.Object.(*v1alpha1.BundleRevision); ok {
					q.AddAfter(bundleOf(rev.Spec.Bundle)[0], Coalesce)
				}
			},
		}).
		Watches(&v1alpha1.Composition{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.AddAfter(bundleOf(e.Object.(*v1alpha1.Composition).Spec.Bundle)[0], Coalesce)
			},
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				old, new := e.ObjectOld.(*v1alpha1.Composition), e.ObjectNew.(*v1alpha1.Composition)
				if old.Spec.Bundle != new.Spec.Bundle {
					q.AddAfter(bundleOf(old.Spec.Bundle)[0], Coalesce)
				}
				if old.Spec.Bundle != new.Spec.Bundle || Notable(old, new) {
					q.AddAfter(bundleOf(new.Spec.Bundle)[0], Coalesce)
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if c, ok := e.Object.(*v1alpha1.Composition); ok {
					q.AddAfter(bundleOf(c.Spec.Bundle)[0], Coalesce)
				}
			},
		}).
		WatchesRawSource(source.Channel(n.ch, handler.Funcs{
			GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.AddAfter(bundleOf(e.Object.GetName())[0], Coalesce)
			},
		})).
		Named("rollout").
		Complete(r)
}

var _ reconcile.Reconciler = (*Reconciler)(nil)
