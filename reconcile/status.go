package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/access"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/parent"
	"github.com/stencil-dev/stencil/reconcile/status"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A pass's status: the one patch at its end, the members of a pass that
// stopped early, transient errors and user errors (stalls).

// patchStatus writes the status once per pass, and only when it changed, so
// a reconcile that finds nothing to do makes no write.
func (r *Controller) patchStatus(ctx context.Context, s *scope) error {
	r.Readiness.Record(metrics.ParentKey{Kind: s.comp.ParentGVK().GroupKind(), NamespacedName: client.ObjectKeyFromObject(s.comp)}, s.status.Conditions)
	if s.assignment != nil {
		if c := s.assignment.Condition(s.comp.GetGeneration()); c != nil {
			meta.SetStatusCondition(&s.status.Conditions, *c)
		}
	}
	status.KeepTransitionTimes(&s.status, s.comp.ParentStatus().Conditions)
	s.status.Inventory = parent.InventoryRecord(s.comp, s.parent)
	if equality.Semantic.DeepEqual(*s.comp.ParentStatus(), s.status) {
		return nil
	}
	old := *s.comp.ParentStatus().DeepCopy()
	// A pass that trusted a parent it never wrote nor read (see
	// cacheTrusted) writes its status only over that version, unless a
	// write of this pass (a hook's record) has since confirmed it.
	// A record of a parent that waits to be admitted is written only over
	// the parent as the pass read it (see authority.Judge).
	lock := r.store.LockStatus(client.ObjectKeyFromObject(s.comp), s.parent) || s.admission.verdict.Lock
	if err := parent.WriteStatus(ctx, r.Client, s.comp, s.status, lock); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		r.store.NoteConflict(s.comp, s.parent, err)
		return errors.Join(fmt.Errorf("patch status of %s: %w", applyset.Describe(s.comp), err), r.keepRecord(ctx, s))
	}
	r.recordOutputChanges(s, old)
	// The response is the parent after this write, every earlier write of
	// stencil included: the cache may be trusted at its version (see
	// recordedParent).
	r.store.Wrote(client.ObjectKeyFromObject(s.comp), s.comp.GetResourceVersion())
	return nil
}

// recordTimeout bounds keepRecord's writes, which outlive the pass's
// context: a controller shutting down still records what it created.
const recordTimeout = 10 * time.Second

// keepRecord writes the record of the set's members alone when the pass's
// status write failed (see applyset.KeepRecord): what the pass created
// or adopted stays recorded, even over a parent another write changed,
// and even when the pass's context ended (the controller stopping).
func (r *Controller) keepRecord(ctx context.Context, s *scope) error {
	if !s.parent.Read || !s.parent.Record.Changed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	version, err := applyset.KeepRecord(ctx, r.Client, r.APIReader, s.comp, s.parent.Inventory, s.parent.Record)
	if err != nil {
		// Whether the record was written is not known: the next pass
		// reads the parent live.
		r.store.Unconfirm(client.ObjectKeyFromObject(s.comp))
		return fmt.Errorf("record the members of %s: %w", applyset.Describe(s.comp), err)
	}
	if version != "" {
		// The cache is trusted only once it holds the record (see
		// cacheTrusted): a pass over the version before would take the
		// members this pass created for objects it never made.
		r.store.Wrote(client.ObjectKeyFromObject(s.comp), version)
	}
	return nil
}

// observeMembers reports the members of a pass that stopped early: those
// of this pass's plan, read live, or none when it made no plan. A pass
// never republishes the members of an earlier one.
func (r *Controller) observeMembers(ctx context.Context, s *scope) {
	if s.plan == nil || s.status.Members != nil {
		return
	}
	s.status.Members = status.Members(ctx, r.memberReader(s), s.plan.ID, s.parent.Record, s.plan.Objects)
	s.status.Summary = status.Summary(s.status.Members)
}

// transient records an error that a retry may fix and returns it for backoff.
func (r *Controller) transient(s *scope, err error) (ctrl.Result, error) {
	status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonReconcileFailed, err.Error())
	return ctrl.Result{}, err
}

// stall records a user error: Stalled until an input changes.
func (r *Controller) stall(s *scope, reason, msg string) {
	status.SetStalled(&s.status, s.comp.GetGeneration(), reason, msg)
	r.Recorder.Eventf(s.comp, nil, "Warning", reason, "Render", "%s", msg)
	s.done = true
}

// stallTerminal stalls the Composition on a terminal failure and remembers
// it for these inputs (see stalls).
func (r *Controller) stallTerminal(s *scope, reason, msg string) ctrl.Result {
	status.SetStalled(&s.status, s.comp.GetGeneration(), reason, msg)
	st := stall{reason: reason, message: msg}
	var res ctrl.Result
	// A grant, or an object's consent to adoption (or its removal), raises
	// no event of the parent's: look again after a while.
	if reason == v1alpha1.ReasonForbidden || reason == v1alpha1.ReasonAdoptionRefused {
		st.expires = time.Now().Add(engine.ForbiddenRecheck)
		res.RequeueAfter = engine.ForbiddenRecheck
	}
	r.stalls.Put(types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}, memoKey(s.comp, s.plan.BundleRevision), st)
	s.done = true
	return res
}

// stallIfDenied stalls the Composition with reason Forbidden when err is an
// access.DeniedError, and looks again after engine.ForbiddenRecheck; any other
// error is returned for backoff.
func (r *Controller) stallIfDenied(s *scope, action string, err error) (ctrl.Result, error) {
	var denied *access.DeniedError
	if !errors.As(err, &denied) {
		return ctrl.Result{}, err
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonForbidden, denied.Error())
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonForbidden, action, "%s", denied.Error())
	s.done = true
	return ctrl.Result{RequeueAfter: engine.ForbiddenRecheck}, nil
}
