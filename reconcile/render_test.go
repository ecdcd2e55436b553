package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestRenderMemo: a failed render is reported again without rendering
// while nothing it depends on changed, and rendered again as soon as one
// input does: the spec (generation), labels, annotations, the Bundle's
// revision, or the Composition itself (made anew under the same name).
func TestRenderMemo(t *testing.T) {
	base := func() *v1alpha1.Composition {
		return &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "shop", UID: "uid-1", Generation: 3,
			Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"a": "1"},
		}}
	}
	name := types.NamespacedName{Namespace: "team-a", Name: "shop"}
	failed := &templates.RenderError{File: "templates/x.yaml", Reason: templates.ReasonTimeout, Msg: "render stopped"}
	var m renderMemo
	m.put(name, renderKey(base(), "sha256:1"), failed)

	if got := m.get(name, renderKey(base(), "sha256:1")); got != failed {
		t.Fatalf("same inputs: got %v, want the remembered error", got)
	}
	changes := map[string]func(c *v1alpha1.Composition) string{
		"generation": func(c *v1alpha1.Composition) string { c.Generation++; return "sha256:1" },
		"label":      func(c *v1alpha1.Composition) string { c.Labels["tier"] = "db"; return "sha256:1" },
		"annotation": func(c *v1alpha1.Composition) string { c.Annotations["b"] = "2"; return "sha256:1" },
		"uid":        func(c *v1alpha1.Composition) string { c.UID = "uid-2"; return "sha256:1" },
		"bundle":     func(c *v1alpha1.Composition) string { return "sha256:2" },
		"applied":    func(c *v1alpha1.Composition) string { c.Status.BundleRevision = "sha256:0"; return "sha256:1" },
	}
	for what, change := range changes {
		c := base()
		rev := change(c)
		if got := m.get(name, renderKey(c, rev)); got != nil {
			t.Errorf("%s changed: got the remembered error, want a new render", what)
		}
	}
	m.forget(name)
	if got := m.get(name, renderKey(base(), "sha256:1")); got != nil {
		t.Errorf("after forget: got %v", got)
	}
}
