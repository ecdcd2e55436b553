package reconcile

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/parent"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// admission is what the pass's admission check (admit) decided.
type admission struct {
	// verdict is authority.Judge's answer.
	verdict authority.Verdict
}

// admit decides whether the pass may act as the parent's ServiceAccount
// (package authority): only when the API server's check of its use
// provably passed for the parent as it stands. The record it keeps in
// status.admission is written with the pass's status (only over the
// parent as read, when the verdict says so). A parent not admitted is
// Stalled (reason NotAdmitted) and nothing is read, applied, pruned or
// deleted as the account; one being deleted whose admission waits for a
// change it can no longer get is let go, its members left in place.
func (r *Controller) admit(ctx context.Context, s *scope) (done bool, res ctrl.Result, err error) {
	p, err := r.authorityParent(s.comp)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	cov, err := r.Authority.Coverage(ctx, r.parentResource())
	if err != nil {
		return false, ctrl.Result{}, err
	}
	v := authority.Judge(cov, p, r.Options.AdmissionMargin, time.Now())
	s.admission = admission{verdict: v}
	if v.Record != nil {
		// Otherwise the record the pass started from (authority.Carried).
		s.status.Admission = v.Record
	}
	if v.Admitted {
		return false, ctrl.Result{}, nil
	}
	res.RequeueAfter = v.RetryAfter
	if !s.comp.GetDeletionTimestamp().IsZero() && v.Pending {
		return true, res, r.letGo(ctx, s, v.Message)
	}
	if !v.Pending && v.RetryAfter > 0 && cov.Problem() == "" {
		status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonNotAdmitted, v.Message)
	} else {
		r.stall(s, v1alpha1.ReasonNotAdmitted, v.Message)
	}
	s.done = true
	return true, res, nil
}

// letGo drops the finalizer of a parent being deleted whose admission
// cannot be told: its members are left as they are, still labelled,
// since nothing may be deleted or orphaned as its account.
func (r *Controller) letGo(ctx context.Context, s *scope, why string) error {
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonNotAdmitted, "Delete", "%s: its members are left in place, still labelled", why)
	live, err := r.store.Read(ctx, s.comp)
	if err != nil || !live.Finalizer {
		return err
	}
	s.deleting = true
	_, err = r.store.Write(ctx, s.comp, live, parent.State{Inventory: live.Inventory, Finalizer: false})
	return err
}

// authorityParent is what authority.Judge needs of comp.
func (r *Controller) authorityParent(comp applyset.Parent) (authority.Parent, error) {
	p := authority.Parent{
		Describe:    applyset.Describe(comp),
		Created:     comp.GetCreationTimestamp().Time,
		Generation:  comp.GetGeneration(),
		Labels:      comp.GetLabels(),
		Annotations: comp.GetAnnotations(),
		Shard:       comp.GetLabels()[shard.Label],
		Deleting:    !comp.GetDeletionTimestamp().IsZero(),
		Account:     engine.ServiceAccount(comp, r.Options.DefaultServiceAccount),
		Record:      comp.ParentStatus().Admission,
	}
	if comp.ParentSpec().ServiceAccountName == "" && r.Options.WriteAsController {
		p.Account = ""
	}
	if r.kind == nil {
		p.Named = comp.ParentSpec().ServiceAccountName
		p.Legacy = authority.EarlierStencil(*comp.ParentStatus())
	} else {
		p.Named = comp.GetAnnotations()[publish.AnnotationServiceAccountName]
	}
	return p, nil
}

// parentResource is the resource of the parents r serves.
func (r *Controller) parentResource() schema.GroupResource {
	if r.kind != nil {
		return schema.GroupResource{Group: r.kind.GVK.Group, Resource: r.kind.Resource}
	}
	return authority.CompositionsResource
}
