package templates_test

import (
	"testing"
	"testing/fstest"

	"github.com/stencil-dev/stencil/templates"
)

// TestStencilYAMLNamespaceSelector: stencil.yaml's namespaceSelector
// becomes spec.namespaceSelector. It says who may use the Bundle, not what
// it renders, so it leaves the revision as it was.
func TestStencilYAMLNamespaceSelector(t *testing.T) {
	files := func(opts string) fstest.MapFS {
		return fstest.MapFS{
			"templates/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")},
			"stencil.yaml":      {Data: []byte(opts)},
		}
	}
	with, err := templates.Load(files("namespaceSelector:\n  matchLabels:\n    tier: gold\n"), templates.LoadOptions{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	sel := with.Spec().NamespaceSelector
	if sel == nil || sel.MatchLabels["tier"] != "gold" {
		t.Fatalf("spec.namespaceSelector = %+v, want matchLabels tier: gold", sel)
	}
	without, err := templates.Load(files("allowNondeterministic: false\n"), templates.LoadOptions{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if without.Spec().NamespaceSelector != nil {
		t.Errorf("spec.namespaceSelector = %+v without one in stencil.yaml", without.Spec().NamespaceSelector)
	}
	if with.Revision() != without.Revision() {
		t.Errorf("revision %s with a namespace selector, %s without: want the same", with.Revision(), without.Revision())
	}
}
