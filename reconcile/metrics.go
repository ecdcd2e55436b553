package reconcile

import (
	"github.com/stencil-dev/stencil/reconcile/metrics"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// outcome classifies a finished pass for stencil_reconcile_passes_total.
func outcome(s *scope, err error) string {
	switch {
	case err != nil:
		return metrics.OutcomeError
	case s.deleting:
		return metrics.OutcomeDeleting
	case s.comp.ParentSpec().Suspend:
		return metrics.OutcomeSuspended
	case meta.IsStatusConditionTrue(s.status.Conditions, v1alpha1.ConditionStalled):
		return metrics.OutcomeStalled
	case s.unchanged:
		return metrics.OutcomeUnchanged
	}
	return metrics.OutcomeFull
}
