package triggers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestMetadataChangedPredicate: label and annotation edits bring a pass,
// except those of the ApplySet metadata stencil writes itself.
func TestMetadataChangedPredicate(t *testing.T) {
	own := func() *v1alpha1.Composition {
		return &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"team": "a", applyset.LabelApplySetID: "applyset-x-v1"},
			Annotations: map[string]string{applyset.AnnotationGroupKinds: "ConfigMap", applyset.AnnotationTooling: "stencil/v1"},
		}}
	}
	for _, tt := range []struct {
		name   string
		change func(c *v1alpha1.Composition)
		want   bool
	}{
		{"nothing", func(*v1alpha1.Composition) {}, false},
		{"stencil's inventory", func(c *v1alpha1.Composition) {
			c.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap,Deployment.apps"
		}, false},
		{"stencil's namespaces", func(c *v1alpha1.Composition) { c.Annotations[applyset.AnnotationNamespaces] = "other" }, false},
		{"stencil's tooling", func(c *v1alpha1.Composition) { c.Annotations[applyset.AnnotationTooling] = "stencil/v2" }, false},
		{"stencil's id", func(c *v1alpha1.Composition) { delete(c.Labels, applyset.LabelApplySetID) }, false},
		{"a label", func(c *v1alpha1.Composition) { c.Labels["team"] = "b" }, true},
		{"a new label", func(c *v1alpha1.Composition) { c.Labels["tier"] = "web" }, true},
		{"an annotation", func(c *v1alpha1.Composition) { c.Annotations["example.com/note"] = "x" }, true},
		{"allow-empty-render", func(c *v1alpha1.Composition) { c.Annotations[v1alpha1.AnnotationAllowEmptyRender] = "true" }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old, updated := own(), own()
			tt.change(updated)
			if got := metadataChangedPredicate().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tt.want {
				t.Errorf("passes = %v, want %v", got, tt.want)
			}
		})
	}
}
