package reconcile

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// recordOutputChanges records one Updated event on the parent naming the
// outputs whose values a status write changed ("phase: \"creating\" →
// \"ready\""), as the articles' controllers recorded their phase changes.
func (r *Controller) recordOutputChanges(s *scope, old v1alpha1.CompositionStatus) {
	changes := status.OutputChanges(old.Outputs, s.status.Outputs)
	if len(changes) == 0 || r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(s.comp, nil, corev1.EventTypeNormal, v1alpha1.ReasonUpdated, "Update", "%s", strings.Join(changes, ", "))
}
