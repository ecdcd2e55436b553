package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stencil-dev/stencil/reconcile/access"
	"github.com/stencil-dev/stencil/reconcile/status"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// ForbiddenRecheck is how long a Composition stalled with reason
// Forbidden waits before looking again: RBAC changes raise no event.
const ForbiddenRecheck = time.Minute

// authorize checks, before anything is applied, that the ServiceAccount a
// Composition applies as (spec.serviceAccountName or the controller's
// default) may create and patch every rendered kind where it is rendered,
// and delete it when pruning is on, so that a missing permission is
// reported up front (Stalled, reason Forbidden) rather than as a half-made
// apply. Kinds the API server does not serve yet (defined by a CRD in the
// same render) are left to the apply itself.
func (r *CompositionReconciler) authorize(ctx context.Context, s *scope) (ctrl.Result, error) {
	sa := serviceAccount(s.comp, r.Options.DefaultServiceAccount)
	if sa == "" || s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	verbs := []string{"create", "patch"}
	if s.comp.ParentSpec().Prune == nil || *s.comp.ParentSpec().Prune {
		verbs = append(verbs, "delete")
	}
	type target struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	var seen []target
	for _, o := range s.plan.Objects {
		t := target{o.GroupVersionKind(), o.GetNamespace()}
		if slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		m, err := r.Mapper.RESTMapping(t.gvk.GroupKind(), t.gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("find the API of %s: %w", t.gvk.Kind, err)
		}
		if err := r.access.AccountMay(ctx, s.comp.GetNamespace(), sa, m, t.ns, verbs...); err != nil {
			return r.stallIfDenied(s, "Authorize", err)
		}
	}
	return ctrl.Result{}, nil
}

// stallIfDenied stalls the Composition with reason Forbidden when err is an
// access.DeniedError, and looks again after ForbiddenRecheck; any other
// error is returned for backoff.
func (r *CompositionReconciler) stallIfDenied(s *scope, action string, err error) (ctrl.Result, error) {
	var denied *access.DeniedError
	if !errors.As(err, &denied) {
		return ctrl.Result{}, err
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonForbidden, denied.Error())
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonForbidden, action, "%s", denied.Error())
	s.done = true
	return ctrl.Result{RequeueAfter: ForbiddenRecheck}, nil
}
