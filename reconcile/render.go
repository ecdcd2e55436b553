package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/observe"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stencil-dev/stencil/reconcile/status"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// The render phase: load the assigned revision through the engine, and
// render its plan, skipping renders known to fail (failedRenders).

// render loads the revision of the Bundle the parent is on (see
// loadBundle) and renders the plan. A missing Bundle, a render
// or validation error, an overrun of the render's limits and a refused
// object stall the Composition: nothing is applied and nothing is pruned.
// A render that failed is not run again until one of its inputs changes
// (see failedRenders), so a hostile bundle costs one render per change, not
// one per member event.
func (r *Controller) render(ctx context.Context, s *scope) (ctrl.Result, error) {
	// The revision the parent is on, or moves to (see revisions.go).
	loaded, outs, stopped, err := r.loadBundle(ctx, s)
	if stopped || err != nil {
		return ctrl.Result{}, err
	}
	s.outputs = outs
	in, capsRevision, err := r.renderInput(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if stopped, err := r.renderValues(ctx, s, loaded, &in); stopped || err != nil {
		return ctrl.Result{}, err
	}
	key := plan.RenderKey(s.comp, revision.RenderKey(loaded), in, capsRevision)
	s.renderKey = key
	// The observed values the last render used, read now (see observer):
	// a render that failed with some is tried again with others.
	observed, answers, last := r.observer.Given(ctx, r.observerPass(s, loaded.Revision()))
	in.Observed, in.Lookups = observed, answers
	key += observe.Digest(in.Observed)
	if loaded.MayGenerate() {
		var keyErr *valuestore.KeyError
		switch err := r.kept(ctx, s, &in); {
		case errors.As(err, &keyErr):
			r.stall(s, v1alpha1.ReasonGeneratedKeyLost, err.Error())
			return ctrl.Result{RequeueAfter: valuestore.KeyRecheck}, nil
		case err != nil:
			return ctrl.Result{}, err
		}
	}
	failed, _ := r.failedRenders.Get(client.ObjectKeyFromObject(s.comp), key)
	stillFails := failed.err != nil && r.answersSame(s, failed.lookups)
	metrics.CacheLookup(metrics.CacheFailedRender, stillFails)
	if stillFails {
		status.SetStalled(&s.status, s.comp.GetGeneration(), plan.RenderReason(failed.err), failed.err.Error())
		s.done = true
		return ctrl.Result{}, nil
	}
	start := time.Now()
	s.upgrade = in.IsUpgrade
	s.plan, s.observed, s.lookedUp, err = r.observer.Plan(ctx, r.observerPass(s, loaded.Revision()), loaded, in, last, s.stores)
	metrics.RenderDuration.Observe(time.Since(start).Seconds())
	status.SetLookups(&s.status, s.lookedUp.Reads, s.lookedUp.Denied) // failed or not
	var renderErr *templates.RenderError
	var refused *plan.RefusedError
	switch {
	case errors.As(err, &renderErr):
		r.failedRenders.Put(client.ObjectKeyFromObject(s.comp), key, failedRender{err: renderErr, lookups: s.lookedUp.Reads})
		r.stall(s, plan.RenderReason(renderErr), err.Error())
		return ctrl.Result{}, nil
	case errors.As(err, &refused):
		r.stall(s, refused.ConditionReason(), err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("render Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	r.failedRenders.Forget(client.ObjectKeyFromObject(s.comp))
	s.status.BundleRevision, s.status.Notes = s.plan.BundleRevision, s.plan.StatusNotes()
	r.migrated(s)
	return ctrl.Result{}, nil
}

// renderValues gives in the values the parent renders with loaded
// (engine.RenderValues): an instance on a revision written against
// another version of its kind is rendered with its spec in that version.
// One that does not convert stalls the pass (RenderFailed), stopped.
func (r *Controller) renderValues(ctx context.Context, s *scope, loaded *templates.Bundle, in *templates.Input) (stopped bool, err error) {
	var convErr *engine.ConversionError
	if in.Values, err = r.RenderValues(ctx, s.comp, loaded); errors.As(err, &convErr) {
		r.stall(s, v1alpha1.ReasonRenderFailed, err.Error())
		return true, nil
	}
	return false, err
}

// migrated records the values migrations the render applied in the
// status, and in a Normal event (ValuesMigrated) when the status named
// others. The parent's spec is never rewritten.
func (r *Controller) migrated(s *scope) {
	applied := s.plan.ValuesMigrations
	s.status.ValuesMigrations = applied
	if len(applied) > 0 && !slices.Equal(applied, s.comp.ParentStatus().ValuesMigrations) {
		r.Recorder.Eventf(s.comp, nil, corev1.EventTypeNormal, v1alpha1.ReasonValuesMigrated, "Render",
			"revision %s of Bundle %s refuses the values as they are: rendered through the values migrations %s (spec.values is unchanged)",
			revision.Name(s.comp.ParentSpec().Bundle, s.plan.BundleRevision), s.comp.ParentSpec().Bundle, strings.Join(applied, ", "))
	}
}

// failedRender is a render that failed: its error, and what it looked up
// (with the answers it got), so it runs again when an answer changes.
type failedRender struct {
	err     *templates.RenderError
	lookups []lookup.Read
}

// answersSame reports whether every lookup of reads answers, in the
// lookup informers, as it did (none ran yet: not the same).
func (r *Controller) answersSame(s *scope, reads []lookup.Read) bool {
	if len(reads) == 0 {
		return true
	}
	table, ok := r.Lookups.Peek(r.lookupParent(s), reads)
	return ok && len(lookup.Changed(reads, table)) == 0
}

// kept gives in the values the set's templates generated before and the
// set's key (package valuestore): those of its stores (members: from the
// member cache, else read live, those of the namespaces as the parent's
// writer, the controller's as the controller) with those this process
// last wrote to them, which a cache that lags holds not yet; s.stores
// keeps the stores as read, for the apply. An error when a store cannot
// be read (a render then would make new values for calls that have
// some), a *valuestore.KeyError when one was written with another key.
func (r *Controller) kept(ctx context.Context, s *scope, in *templates.Input) error {
	key, err := r.Keys.Get(ctx)
	if err != nil {
		return err
	}
	stores, err := valuestore.Read(ctx, valuestore.Source{
		SetID: applyset.ParentID(s.comp), ParentNamespace: s.comp.GetNamespace(),
		Namespaces: append([]string{s.comp.GetNamespace()}, s.parent.Inventory.Namespaces...), Tenant: r.memberReader(s),
		ControllerNamespace: r.Options.Namespace, Controller: r.watches.Reader(), Key: &key, Record: s.parent.Record,
	})
	if err != nil {
		return err
	}
	written, _ := r.generated.Get(client.ObjectKeyFromObject(s.comp), string(s.comp.GetUID()))
	if kept := valuestore.Merge(stores.Values(), written); len(kept) > 0 {
		in.Generated = kept
	}
	in.GeneratedKey = stores.SetKey()
	s.stores = stores
	return nil
}

// waitForSource reports a parent whose Bundle's chart is not at hand:
// Reconciling with reason SourceNotReady, and nothing applied or pruned.
// A Bundle whose chart was never pulled (or is being verified again)
// brings the next pass when its status records one; a chart to pull
// again (a lost cache) is retried with backoff. A chart that failed its
// verification stalls the parent (SourceUnverified) until the Bundle's
// status changes.
func (r *Controller) waitForSource(s *scope, err error) (ctrl.Result, error) {
	var unverified *pull.UnverifiedError
	if errors.As(err, &unverified) {
		r.stall(s, v1alpha1.ReasonSourceUnverified, err.Error())
		return ctrl.Result{}, nil
	}
	status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonSourceNotReady, err.Error())
	s.done = true
	var notPulled *pull.NotPulledError
	if errors.As(err, &notPulled) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// renderInput is RenderInput in the controller: the Composition from the
// cache, its recorded applyset.Inventory as ensureParent read it live, and the
// cached capabilities with their revision.
func (r *Controller) renderInput(ctx context.Context, s *scope) (templates.Input, string, error) {
	caps, err := r.APIs.Get(ctx)
	if err != nil {
		return templates.Input{}, "", err
	}
	live := &plan.LiveComposition{UID: s.comp.GetUID(), Installed: plan.Installed(s.parent.Inventory)}
	return plan.RenderInput(s.comp, live, caps.Caps), caps.Revision, nil
}

// loadBundle is the render phase's load: the assigned revision, parsed,
// with its outputs. A missing Bundle, a pin of no revision, values the
// assigned revision refuses (where the Bundle holds nobody back) and a
// content that does not load stall the parent; a chart not at hand waits (see
// waitForSource). The assignment is kept for the status (RevisionHeld).
func (r *Controller) loadBundle(ctx context.Context, s *scope) (*templates.Bundle, *outputs.Set, bool, error) {
	a, err := r.Assign(ctx, s.comp)
	if apierrors.IsNotFound(err) {
		r.stall(s, v1alpha1.ReasonBundleNotFound, fmt.Sprintf("Bundle %q not found", s.comp.ParentSpec().Bundle))
		return nil, nil, true, nil
	} else if err != nil {
		return nil, nil, false, fmt.Errorf("read Bundle %s: %w", s.comp.ParentSpec().Bundle, err)
	}
	s.assignment = &a.Assignment
	switch {
	case a.NotFound:
		r.stall(s, v1alpha1.ReasonRevisionNotFound, a.Message)
		return nil, nil, true, nil
	case a.Refused:
		r.stall(s, v1alpha1.ReasonValuesRefused, a.Message)
		return nil, nil, true, nil
	}
	if a.Reason == v1alpha1.ReasonPinRefused {
		r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonPinRefused, "Render", "%s", a.Message)
	}
	loaded, outs, err := r.LoadAssigned(ctx, a, false)
	var notFound *engine.RevisionNotFoundError
	var notVerified *revision.NotVerifiedError
	var source *engine.SourceError
	switch {
	case errors.As(err, &notFound):
		r.stall(s, v1alpha1.ReasonRevisionNotFound, err.Error())
		return nil, nil, true, nil
	case errors.As(err, &notVerified):
		status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonSourceNotReady, err.Error())
		s.done = true
		return nil, nil, true, nil
	case errors.As(err, &source):
		_, err = r.waitForSource(s, source.Err)
		return nil, nil, true, err
	case err != nil:
		r.stall(s, v1alpha1.ReasonRenderFailed, err.Error())
		return nil, nil, true, nil
	}
	return loaded, outs, false, nil
}
