package plan_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/templates"
)

// TestRenderMemo: a failed render is reported again without rendering
// while nothing it depends on changed, and rendered again as soon as one
// input does: the spec (generation), labels, annotations, the Bundle's
// revision, the Composition itself (made anew under the same name), its
// ApplySet's members (.Release.IsUpgrade) or the served APIs. The
// metadata stencil itself writes on the Composition is not an input.
func TestRenderMemo(t *testing.T) {
	type inputs struct {
		comp      *v1alpha1.Composition
		bundle    string
		installed bool
		caps      string
	}
	base := func() *inputs {
		return &inputs{comp: &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "shop", UID: "uid-1", Generation: 3,
			Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"a": "1"},
		}}, bundle: "sha256:1", caps: "caps-1"}
	}
	key := func(in *inputs) string {
		live := &plan.LiveComposition{UID: in.comp.UID, Installed: in.installed}
		return plan.RenderKey(in.comp, in.bundle, plan.RenderInput(in.comp, live, nil), in.caps)
	}
	name := types.NamespacedName{Namespace: "team-a", Name: "shop"}
	failed := &templates.RenderError{File: "templates/x.yaml", Reason: templates.ReasonTimeout, Msg: "render stopped"}
	var m recall.Memo[*templates.RenderError]
	m.Put(name, key(base()), failed)

	same := map[string]func(in *inputs){
		"nothing":         func(*inputs) {},
		"applyset id":     func(in *inputs) { in.comp.Labels[applyset.LabelApplySetID] = "applyset-x-v1" },
		"group-kinds":     func(in *inputs) { in.comp.Annotations[applyset.AnnotationGroupKinds] = "ConfigMap" },
		"tooling":         func(in *inputs) { in.comp.Annotations[applyset.AnnotationTooling] = "stencil/v2" },
		"status":          func(in *inputs) { in.comp.Status.BundleRevision = "sha256:0" },
		"last-applied":    func(in *inputs) { in.comp.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}" },
		"resourceVersion": func(in *inputs) { in.comp.ResourceVersion = "42" },
	}
	for what, change := range same {
		in := base()
		change(in)
		if got, _ := m.Get(name, key(in)); got != failed {
			t.Errorf("%s changed: got %v, want the remembered error", what, got)
		}
	}
	changes := map[string]func(in *inputs){
		"generation":   func(in *inputs) { in.comp.Generation++ },
		"label":        func(in *inputs) { in.comp.Labels["tier"] = "db" },
		"annotation":   func(in *inputs) { in.comp.Annotations["b"] = "2" },
		"uid":          func(in *inputs) { in.comp.UID = "uid-2" },
		"bundle":       func(in *inputs) { in.bundle = "sha256:2" },
		"installed":    func(in *inputs) { in.installed = true },
		"capabilities": func(in *inputs) { in.caps = "caps-2" },
	}
	for what, change := range changes {
		in := base()
		change(in)
		if got, _ := m.Get(name, key(in)); got != nil {
			t.Errorf("%s changed: got the remembered error, want a new render", what)
		}
	}
	m.Forget(name)
	if got, _ := m.Get(name, key(base())); got != nil {
		t.Errorf("after forget: got %v", got)
	}
}
