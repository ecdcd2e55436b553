package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/hooks"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/observe"
	"github.com/stencil-dev/stencil/reconcile/parent"
	"github.com/stencil-dev/stencil/reconcile/prune"

	"github.com/stencil-dev/stencil/reconcile/status"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/crds"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// apply applies the plan: the pre- hooks that run for this revision (see
// hooks.Run) stage by stage, each waited on until it succeeded; then the
// ordinary members stage by stage, a stage of CRDs waited on until
// Established (if one is not, the pass ends there: the CRD's own update
// event brings the next one); then, once every ordinary member is Current
// (read live), the post- hooks. Then the pass's writes are checked for a
// member that flaps.
func (r *Controller) apply(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	defer s.events.RecordApplied(r.Recorder, s.comp)
	defer s.events.RecordRepaired(r.Recorder, s.comp)
	// What the cache does not hold is read as the parent's writer (its
	// ServiceAccount): the tenant's RBAC bounds the reads made for it.
	reader := r.watches.ReaderAs(s.writer)
	a := &applyset.Applier{Writer: s.writer, Reader: reader, ID: s.plan.ID, Record: s.parent.Record, Consent: r.consent(ctx, s), Concurrency: max(r.Options.ApplyConcurrency, 1), Schemas: r.Schemas, Pace: r.Pace}
	// The chart's crds/ CRDs come first, as Helm installs them.
	if len(s.plan.CRDs) > 0 {
		if res, err, stop := r.installCRDs(ctx, s); stop {
			return res, err
		}
	}
	// The values the templates generated are kept before anything that
	// may hold one is written (package valuestore): the stores of the
	// namespaces as the writer, the controller's as the controller.
	if s.stores != nil {
		own := &applyset.Applier{Writer: r.Client, Reader: r.watches.Reader(), ID: s.plan.ID, Concurrency: 1, Schemas: r.Schemas}
		results, ok := s.stores.Apply(ctx, a, own)
		s.results = append(s.results, results...)
		r.recordApplies(s, results)
		if !ok {
			return r.detectFlapping(s), nil
		}
		r.generated.Put(client.ObjectKeyFromObject(s.comp), string(s.comp.GetUID()), s.stores.Written())
	}
	run, err := r.Hooks.Start(ctx, r.hookPass(s, a))
	if err != nil {
		return ctrl.Result{}, err
	}
	if done, err := run.Stages(ctx, run.Pre, true); err != nil || !done {
		return r.detectFlapping(s), err
	}
	ordinary := plan.OrdinaryObjects(s.plan.Objects)
	if !r.applyStages(ctx, s, a, ordinary) || len(hooks.Pending(s.status.Hooks, s.plan.Objects)) == 0 || len(applyset.Failures(s.results)) > 0 {
		return r.detectFlapping(s), nil
	}
	// Read live, not from the cache: right after an apply the cache may
	// still hold a member's previous generation, Current, and a post hook
	// must not run before the rollout it follows has even begun.
	for _, m := range status.Members(ctx, r.LiveAs(s.writer), s.plan.ID, s.parent.Record, ordinary) {
		if m.Status != kstatus.CurrentStatus.String() {
			return r.detectFlapping(s), nil
		}
	}
	_, err = run.Stages(ctx, run.Post, false)
	return r.detectFlapping(s), err
}

// installCRDs installs the chart's crds/ CRDs (package crds) as the
// parent's writer, and reports whether the pass stops there: a write the
// account may not make stalls it (Forbidden), as does one the API server
// refuses for good (applyset.TerminalReason: a CRD without the approval
// a group of Kubernetes' own requires is Invalid); a CRD not Established
// yet ends it (looked at again shortly: no watch sees a CRD that is no
// member).
func (r *Controller) installCRDs(ctx context.Context, s *scope) (ctrl.Result, error, bool) {
	consent := r.consent(ctx, s).Parent
	out, err := crds.Installer{Writer: s.writer, Reader: r.APIReader, Record: s.parent.Record, Consent: consent}.Install(ctx, s.plan.CRDs, s.plan.ReplaceCRDs)
	out.Record(r.Recorder, s.comp, consent)
	var refused *crds.WriteError
	switch {
	case errors.As(err, &refused) && apierrors.IsForbidden(err):
		account := ""
		if s.writer != r.Client {
			account = engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount)
		}
		denied := r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), account, crds.GroupKind, refused.Verb, "")
		res, err := r.stallIfDenied(s, "Apply", denied)
		return res, err, true
	case errors.As(err, &refused) && applyset.TerminalReason(err) != "":
		reason := applyset.TerminalReason(err)
		r.Recorder.Eventf(s.comp, nil, "Warning", reason, "Apply", "%v", err)
		return r.stallTerminal(s, reason, err.Error()), nil, true
	case err != nil:
		return ctrl.Result{}, err, true
	case len(out.Pending) > 0:
		status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonProgressing,
			fmt.Sprintf("waiting for CustomResourceDefinitions (crds/) to be Established: %s", strings.Join(out.Pending, ", ")))
		s.done = true
		return ctrl.Result{RequeueAfter: crdRecheck}, nil, true
	}
	return ctrl.Result{}, nil, false
}

// crdRecheck is how soon a pass waiting for a crds/ CRD to be
// Established looks again.
const crdRecheck = 2 * time.Second

// hookPass is what the hooks of pass s run with: a's applies, s's
// pruner's deletes, and s's status, results and stall.
func (r *Controller) hookPass(s *scope, a *applyset.Applier) hooks.Pass {
	return hooks.Pass{
		Parent: s.comp, Status: &s.status, Objects: s.plan.Objects, BundleRevision: s.plan.BundleRevision,
		Upgrade: s.upgrade, Applier: a, Pruner: r.pruner(s), Reader: r.LiveAs(s.writer),
		Applied: func(res applyset.ApplyResult) {
			s.results = append(s.results, res)
			r.recordApplies(s, []applyset.ApplyResult{res})
		},
		Stall: func(reason, msg string) { r.stallTerminal(s, reason, msg) },
		End:   func() { s.done = true },
		Written: func(version string) {
			r.store.Wrote(client.ObjectKeyFromObject(s.comp), version)
		},
	}
}

// applyStages applies objects stage by stage and reports whether every
// stage was applied: false when a stage of CRDs is not Established yet,
// or one of its CRDs failed to apply. A CRD the API server refused (one
// without the approval a group of Kubernetes' own requires: Invalid)
// never becomes Established: the pass is not told to wait for it, but
// goes on to report the failure (observe), applying nothing of the later
// stages, which may hold its kind.
func (r *Controller) applyStages(ctx context.Context, s *scope, a *applyset.Applier, objs []*unstructured.Unstructured) bool {
	for _, stage := range plan.Stages(objs) {
		results := a.ApplyStage(ctx, stage)
		s.results = append(s.results, results...)
		r.recordApplies(s, results)
		if stage[0].GetKind() != "CustomResourceDefinition" {
			continue
		}
		if len(applyset.Failures(results)) > 0 {
			return false
		}
		if pending := applyset.WaitEstablished(ctx, a.Reader, stage); len(pending) > 0 {
			status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonProgressing,
				fmt.Sprintf("waiting for CustomResourceDefinitions to be Established: %s", strings.Join(pending, ", ")))
			s.done = true
			return false
		}
	}
	return true
}

// recordApplies turns apply results into metrics and events: a member
// created or configured goes into the pass's one Applied event (recorded
// when the apply phase ends, see status.Events); a failed one gets a
// Warning of its own, with the member as the related object.
func (r *Controller) recordApplies(s *scope, results []applyset.ApplyResult) {
	for _, res := range results {
		metrics.Applies.WithLabelValues(string(res.Action)).Inc()
		switch res.Action {
		case applyset.Created, applyset.Configured:
			s.events.Apply(res)
			if res.Action == applyset.Configured && len(res.Drift) > 0 {
				s.events.Repair(res)
				metrics.DriftRepairs.Inc()
			}
		case applyset.Failed:
			reason := v1alpha1.ReasonApplyFailed
			if res.Reason != "" {
				reason = res.Reason
			}
			r.Recorder.Eventf(s.comp, res.Related(), "Warning", reason, "Apply", "%v", res.Err)
		}
	}
}

// detectFlapping records the pass's writes and stalls the Composition,
// until its inputs change, when one member flaps (see applyset.FlapDetector).
func (r *Controller) detectFlapping(s *scope) ctrl.Result {
	name := types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}
	f, ok := r.flaps.Record(name, memoKey(s.comp, s.plan.BundleRevision), s.results, time.Now())
	if !ok {
		return ctrl.Result{}
	}
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonFlapping, "Apply", "%s", f)
	return r.stallTerminal(s, v1alpha1.ReasonFlapping, f.String())
}

// prune is the one way members are deleted in a pass. It runs only
// when prune.Gate is open (a render applied in full, none failed, from
// values that did not move under it, of a parent neither suspended nor
// set not to prune) and no recorded kind is forbidden to list; prune.Select
// then sorts the listed members (from the member cache where it holds
// their kind, see cachedPruner) into those to delete (the set's, not
// applied this pass), to orphan (helm.sh/resource-policy: keep) and to
// keep recorded (held back, hooks spared: see sparedHooks). Past the
// prune budget, or for a protected kind, nothing is deleted and the
// parent stalls (see withinBudget). A shrinking of the inventory is
// confirmed live first (see confirmDrops); a delete the API server
// forbids stalls the parent (reason Forbidden) and keeps the member
// recorded.
func (r *Controller) prune(ctx context.Context, s *scope) (ctrl.Result, error) {
	gate := prune.Gate{
		Suspended: s.comp.ParentSpec().Suspend,
		Failed:    len(applyset.Failures(s.results)) > 0,
		Partial:   !ordinaryApplied(s),
		Moved:     len(s.rerender) > 0 || len(s.stale) > 0,
		Disabled:  s.comp.ParentSpec().Prune != nil && !*s.comp.ParentSpec().Prune,
	}
	if gate.Closed() != "" {
		if gate == (prune.Gate{Disabled: true}) {
			r.boundRecord(ctx, s)
		}
		return ctrl.Result{}, nil
	}
	p := r.cachedPruner(s)
	listed := p.List(ctx, s.parent.Inventory, s.comp.GetNamespace())
	if len(listed.Forbidden) > 0 {
		return r.stallIfDenied(s, "Prune", r.Access.Denied(ctx, r.Mapper, s.comp.GetNamespace(), "", listed.Forbidden[0].GK, "list", listed.Forbidden[0].Namespace))
	}
	spared, errs := r.sparedHooks(ctx, s, listed.Members)
	sel := prune.Select(listed.Members, prune.Set{ID: p.ID, Record: s.parent.Record, Applied: prune.Applied(s.results), Spared: spared,
		HeldBack: func(m applyset.Member) bool {
			return s.plan.HoldsBack(m.GVK.GroupKind(), m.Meta.Namespace, m.Meta.Name, s.comp.GetNamespace())
		}})
	// What stays recorded: the render's inventory, every recorded
	// namespace for the kinds that could not be listed (their members may
	// be in any), and the members the pass leaves in place.
	remaining := applyset.Inventory{GroupKinds: slices.Clone(listed.Unlisted)}.Union(s.plan.Inventory)
	if len(listed.Unlisted) > 0 {
		remaining = remaining.Union(applyset.Inventory{Namespaces: s.parent.Inventory.Namespaces})
	}
	keep := func(m applyset.Member) { remaining = remaining.Union(memberInventory(m)) }
	for _, m := range sel.Keep {
		keep(m)
	}
	defer s.events.RecordPruned(r.Recorder, s.comp)
	// helm.sh/resource-policy: keep: orphaned, not deleted. Its kind stays
	// recorded this pass (an orphaning the writer may not make leaves it
	// labelled); the next pass no longer lists it.
	for _, m := range sel.Orphan {
		if err := r.releaser(s).Orphan(ctx, []applyset.Member{m}); err != nil {
			errs = append(errs, err.Error())
		}
		keep(m)
	}
	// The prune budget and the protected kinds (see withinBudget).
	if ok, err := r.withinBudget(ctx, s, sel.Delete); err != nil || !ok {
		if err != nil {
			return ctrl.Result{}, err
		}
		for _, m := range sel.Delete {
			keep(m)
		}
		sel.Delete = nil
	}
	deleted, deleteErrs, denied := r.delete(ctx, s, p, sel.Delete, keep)
	if errs = append(errs, deleteErrs...); len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("prune: %s", strings.Join(errs, "; "))
	}
	var err error
	remaining = r.confirmDrops(ctx, s, s.parent.Inventory, remaining, deleted, listed)
	s.parent, err = r.store.Write(ctx, s.comp, s.parent, parent.State{Inventory: remaining, Finalizer: true})
	if err != nil || denied == nil {
		return ctrl.Result{}, err
	}
	return r.stallIfDenied(s, "Prune", denied)
}

// ordinaryApplied reports whether every ordinary object of the plan (not
// a hook, nor a store of generated values) was applied this pass: the
// prune gate's "render applied in full".
func ordinaryApplied(s *scope) bool {
	applied := 0
	for _, res := range s.results {
		if !plan.IsHook(res.Object) && !valuestore.IsStore(res.Object) {
			applied++
		}
	}
	return applied == len(plan.OrdinaryObjects(s.plan.Objects))
}

func memberInventory(m applyset.Member) applyset.Inventory {
	return applyset.Inventory{GroupKinds: []schema.GroupKind{m.GVK.GroupKind()}, Namespaces: []string{m.Meta.Namespace}}
}

// observe rebuilds the status from the apply results and the members'
// kstatus, read from the cache (see watch.Watcher.Reader). Kinds the API server
// serves only since this pass's apply (a CRD in the same render) are
// watched first. When every failed apply failed for good (see
// applyset.TerminalReason), the Composition is Stalled with the first one's reason
// and not retried until its inputs change; otherwise the failures are
// returned for backoff.
func (r *Controller) observe(ctx context.Context, s *scope) (ctrl.Result, error) {
	if res, err := r.watch(ctx, s); err != nil || s.done {
		return res, err
	}
	parent := status.ExpressionParent(s.comp, s.outputs)
	members, lives := status.Observe(ctx, status.AfterApply(r.memberReader(s), s.results), s.plan.ID, s.parent.Record, plan.OrdinaryObjects(s.plan.Objects), s.outputs, parent)
	// After the conditions the members give, so Ready stays first.
	defer status.SetOutputs(ctx, &s.status, s.comp.GetGeneration(), s.outputs, parent, lives)
	failed := applyset.Failures(s.results)
	if len(failed) == 0 {
		status.Summarize(&s.status, s.comp.GetGeneration(), members)
		observe.Report(&s.status, s.comp.GetGeneration(), s.observed, s.rerender)
		if pending := hooks.Pending(s.status.Hooks, s.plan.Objects); len(pending) > 0 && meta.IsStatusConditionTrue(s.status.Conditions, v1alpha1.ConditionReady) {
			status.SetReconciling(&s.status, s.comp.GetGeneration(), v1alpha1.ReasonProgressing,
				fmt.Sprintf("%s; waiting for hooks: %s", s.status.Summary, strings.Join(pending, ", ")))
		}
		return ctrl.Result{}, nil
	}
	s.status.Members = members
	msgs := make([]string, len(failed))
	reason := ""
	terminal := true
	for i, f := range failed {
		msgs[i] = f.Err.Error()
		terminal = terminal && f.Reason != ""
		if reason == "" {
			reason = f.Reason
		}
	}
	msg := fmt.Sprintf("%d of %d objects failed to apply: %s", len(failed), len(s.plan.Objects), strings.Join(msgs, "; "))
	if terminal {
		return r.stallTerminal(s, reason, msg), nil
	}
	return ctrl.Result{}, errors.New(msg)
}

// memberReader reads the members of pass s: from the member cache, and
// what it does not hold (a kind not synced yet) live as the parent's
// writer (its ServiceAccount), never as the controller: a status reads
// nothing the tenant's account could not (see package status, which
// shows only the set's own members).
func (r *Controller) memberReader(s *scope) client.Reader {
	return r.watches.ReaderAs(r.LiveAs(s.writer))
}

// suspended reports a suspended Composition: nothing is rendered, applied,
// pruned or written but its status. status.observedGeneration stays at the
// generation last reconciled, so kstatus readers (Flux, Argo CD, kubectl
// wait) see a generation that is not applied as in progress, never as
// done; Ready is False with reason Suspended. The members are the live
// objects of the set, found by their part-of label over the recorded
// inventory, each with its kstatus.
func (r *Controller) suspended(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.status.ObservedGeneration = s.comp.ParentStatus().ObservedGeneration
	r.passes.Forget(client.ObjectKeyFromObject(s.comp))
	msg := fmt.Sprintf("suspended: generation %d is not applied; nothing is written while spec.suspend is true", s.comp.GetGeneration())
	if last := s.comp.ParentStatus().ObservedGeneration; last > 0 {
		msg = fmt.Sprintf("suspended: generation %d is not applied (generation %d was the last reconciled); nothing is written while spec.suspend is true", s.comp.GetGeneration(), last)
	}
	status.SetSuspended(&s.status, s.comp.GetGeneration(), msg)
	live, err := r.store.Recorded(ctx, s.comp)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.parent = live
	id := applyset.ParentID(s.comp)
	listed := r.cachedPruner(s).List(ctx, live.Inventory, s.comp.GetNamespace())
	objs := status.ListedMembers(listed.Members, id, live.Record)
	s.status.Members = status.Members(ctx, r.memberReader(s), id, live.Record, objs)
	s.status.Summary = status.Summary(s.status.Members)
	return ctrl.Result{}, nil
}
