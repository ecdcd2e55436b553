package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// apply applies the plan stage by stage. A stage of CRDs is waited on until
// Established before the next stage; if one is not, the pass ends there (the
// CRD's own update event brings the next one).
func (r *CompositionReconciler) apply(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.comp.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	a := &applier{writer: s.writer, reader: r.Cache, live: r.APIReader, id: s.plan.ID, concurrency: max(r.Options.ApplyConcurrency, 1)}
	for _, stage := range stages(s.plan.Objects) {
		results := a.applyStage(ctx, stage)
		s.results = append(s.results, results...)
		r.recordApplies(s, results)
		if stage[0].GetKind() != "CustomResourceDefinition" {
			continue
		}
		if pending := waitEstablished(ctx, r.Cache, stage); len(pending) > 0 {
			setReconciling(&s.status, s.comp.Generation, ReasonProgressing,
				fmt.Sprintf("waiting for CustomResourceDefinitions to be Established: %s", strings.Join(pending, ", ")))
			s.done = true
			return ctrl.Result{}, nil
		}
	}
	return ctrl.Result{}, nil
}

// recordApplies turns apply results into events and metrics.
func (r *CompositionReconciler) recordApplies(s *scope, results []ApplyResult) {
	for _, res := range results {
		appliesTotal.WithLabelValues(string(res.Action)).Inc()
		switch res.Action {
		case Created, Configured:
			r.Recorder.Eventf(s.comp, nil, "Normal", string(res.Action), "Apply", "%s %s", ref(res.Object), strings.ToLower(string(res.Action)))
		case Failed:
			r.Recorder.Eventf(s.comp, nil, "Warning", ReasonApplyFailed, "Apply", "%v", res.Err)
		}
	}
}

// failedApplies returns the failed apply results.
func failedApplies(results []ApplyResult) []ApplyResult {
	return slices.DeleteFunc(slices.Clone(results), func(r ApplyResult) bool { return r.Action != Failed })
}

// prune is the one gate to deleting members. It runs only when the render
// was complete (a plan exists), every object was applied, the Composition is
// neither suspended nor opted out of pruning; then it deletes the listed
// members that were not just applied (see prunable), and shrinks the
// parent's inventory to what is left.
func (r *CompositionReconciler) prune(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.comp.Spec.Suspend || len(failedApplies(s.results)) > 0 || len(s.results) != len(s.plan.Objects) {
		return ctrl.Result{}, nil
	}
	if s.comp.Spec.Prune != nil && !*s.comp.Spec.Prune {
		return ctrl.Result{}, nil
	}
	keep := make(map[types.UID]bool, len(s.results))
	for _, res := range s.results {
		keep[res.UID] = true
	}
	p := &pruner{lister: r.APIReader, writer: s.writer, mapper: r.Mapper, id: s.plan.ID}
	listed := p.list(ctx, s.parent.inventory, s.comp.Namespace)
	remaining := inventory{groupKinds: slices.Clone(listed.unlisted)}.union(s.plan.inventory)
	if len(listed.unlisted) > 0 {
		// Members of the kinds that could not be listed may be in any
		// recorded namespace: keep them all recorded.
		remaining = remaining.union(inventory{namespaces: s.parent.inventory.namespaces})
	}
	var errs []string
	for _, m := range listed.members {
		if !prunable(m, keep) {
			if !keep[m.meta.UID] {
				remaining = remaining.union(memberInventory(m))
			}
			continue
		}
		conflict, err := p.deleteMember(ctx, m)
		switch {
		case err != nil:
			errs = append(errs, err.Error())
			remaining = remaining.union(memberInventory(m))
		case conflict:
			remaining = remaining.union(memberInventory(m))
		default:
			prunesTotal.Inc()
			r.Recorder.Eventf(s.comp, nil, "Normal", "Pruned", "Prune", "%s pruned", m.ref())
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("prune: %s", strings.Join(errs, "; "))
	}
	var err error
	s.parent, err = r.writeParent(ctx, s.comp, s.parent, parentState{inventory: remaining, finalizer: true})
	return ctrl.Result{}, err
}

func memberInventory(m member) inventory {
	return inventory{groupKinds: []schema.GroupKind{m.gvk.GroupKind()}, namespaces: []string{m.meta.Namespace}}
}

// observe rebuilds the status from the apply results and the members'
// kstatus read from the cache.
func (r *CompositionReconciler) observe(ctx context.Context, s *scope) (ctrl.Result, error) {
	members := memberStatuses(ctx, r.Cache, s.plan.Objects)
	failed := failedApplies(s.results)
	if len(failed) == 0 {
		summarize(&s.status, s.comp.Generation, members)
		if s.comp.Spec.Suspend {
			c := s.status.Conditions
			for i := range c {
				if c[i].Type == ConditionReady {
					c[i].Message = "suspended: no writes; " + c[i].Message
				}
			}
		}
		return ctrl.Result{}, nil
	}
	s.status.Members = members
	msgs := make([]string, len(failed))
	terminal := true
	for i, f := range failed {
		msgs[i] = f.Err.Error()
		terminal = terminal && (apierrors.IsInvalid(f.Err) || apierrors.IsBadRequest(f.Err) || errors.As(f.Err, new(*ForeignMemberError)))
	}
	msg := fmt.Sprintf("%d of %d objects failed to apply: %s", len(failed), len(s.plan.Objects), strings.Join(msgs, "; "))
	if terminal {
		setStalled(&s.status, s.comp.Generation, ReasonApplyFailed, msg)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, fmt.Errorf("%s", msg)
}
