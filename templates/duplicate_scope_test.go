package templates_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestDuplicateOfAClusterScopedKindNamesBothTemplates: an object of a kind
// the cluster serves cluster-scoped (a CRD's, known from .Capabilities, or
// declared Cluster by a CRD of the same render) rendered twice, once with
// a namespace and once without, is one object: the render refuses it and
// names both templates, as it does for built-in kinds. Without either,
// the kind may be namespaced, and the two are two objects.
func TestDuplicateOfAClusterScopedKindNamesBothTemplates(t *testing.T) {
	widget := func(ns string) string {
		s := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s
	}
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Widget, plural: widgets}\n"
	files := map[string]string{"templates/a.yaml": widget(""), "templates/b.yaml": widget("other")}
	in := templates.Input{Composition: templates.CompositionInfo{Name: "shop", Namespace: "shop"}}
	render := func(files map[string]string, caps *templates.Capabilities) error {
		t.Helper()
		b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "dup"}, Spec: v1alpha1.BundleSpec{Files: files}})
		if err != nil {
			t.Fatal(err)
		}
		in := in
		in.Capabilities = caps
		_, err = templates.Render(b, in)
		return err
	}
	if err := render(files, nil); err != nil {
		t.Fatalf("a kind of unknown scope in two namespaces: %v, want two objects", err)
	}
	caps := templates.DefaultCapabilities()
	caps.ClusterScopedKinds = []string{"example.com/Widget"}
	withCRD := map[string]string{"templates/a.yaml": widget(""), "templates/b.yaml": widget("other"), "templates/crd.yaml": crd}
	for name, err := range map[string]error{"from the cluster": render(files, caps), "from a CRD of the render": render(withCRD, nil)} {
		if err == nil || !strings.Contains(err.Error(), "templates/a.yaml") || !strings.Contains(err.Error(), "templates/b.yaml") || !strings.Contains(err.Error(), "rendered twice") {
			t.Errorf("cluster-scoped %s: err = %v, want a duplicate naming both templates", name, err)
		}
	}
}
