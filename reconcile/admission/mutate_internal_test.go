package admission

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// TestWithMetadata: the patch sets the id label and tooling, widens the
// annotations the object has with the render's kinds and namespaces (never
// narrows them), adds the finalizer only when asked (on create), and
// reports no change when everything is in place.
func TestWithMetadata(t *testing.T) {
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop",
		Annotations: map[string]string{applyset.AnnotationGroupKinds: "Secret", "keep": "me"}}}
	comp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(comp)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: content}
	planned := &plan.Plan{Inventory: applyset.Inventory{
		GroupKinds: []schema.GroupKind{{Kind: "ConfigMap"}, {Group: "apps", Kind: "Deployment"}},
		Namespaces: []string{"shop", "other"},
	}}
	out, changed := withMetadata(obj, comp, planned, "v1", true)
	if !changed {
		t.Fatal("no change reported")
	}
	a := out.GetAnnotations()
	if a[applyset.AnnotationGroupKinds] != "ConfigMap,Deployment.apps,Secret" || a[applyset.AnnotationNamespaces] != "other" ||
		a[applyset.AnnotationTooling] != "stencil/v1" || a["keep"] != "me" {
		t.Errorf("annotations %v", a)
	}
	if out.GetLabels()[applyset.LabelApplySetID] != applyset.ParentID(comp) {
		t.Errorf("labels %v", out.GetLabels())
	}
	if !slices.Equal(out.GetFinalizers(), []string{v1alpha1.Finalizer}) {
		t.Errorf("finalizers %v", out.GetFinalizers())
	}
	if _, changed := withMetadata(out, comp, planned, "v1", true); changed {
		t.Error("a change reported for an object already carrying its metadata")
	}
	if upd, _ := withMetadata(obj, comp, planned, "v1", false); len(upd.GetFinalizers()) != 0 {
		t.Errorf("an update got finalizers %v", upd.GetFinalizers())
	}
}
