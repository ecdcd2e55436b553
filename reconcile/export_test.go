package reconcile

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// NewStandaloneReconciler returns a Composition reconciler on mgr whose
// controller is never started, for benchmarks that call Reconcile
// themselves: the watches it starts feed mgr's cache, and no worker of its
// own reconciles in the background.
func NewStandaloneReconciler(mgr ctrl.Manager, opts Options) (*CompositionReconciler, error) {
	r, err := newCompositionReconciler(mgr, opts)
	if err != nil {
		return nil, err
	}
	r.controller, err = controller.NewUnmanaged("composition-standalone", controller.Options{Reconciler: r, SkipNameValidation: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("build the standalone Composition controller: %w", err)
	}
	return r, nil
}

// ForgetLastPass drops what the reconciler remembers of the Composition's
// last successful pass, so its next pass is a full one.
func (r *CompositionReconciler) ForgetLastPass(name types.NamespacedName) { r.passes.forget(name) }
