package templates_test

import (
	"testing"
	"testing/fstest"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestStencilYAMLAdopt: stencil.yaml's permissions.adopt (issue 20 item 3)
// is read into the Bundle's spec.permissions.adopt, beside clusterScoped.
func TestStencilYAMLAdopt(t *testing.T) {
	fsys := fstest.MapFS{
		"stencil.yaml":     {Data: []byte("permissions:\n  adopt:\n  - {group: \"\", kind: ConfigMap}\n  - {group: apps, kind: \"*\"}\n")},
		"templates/x.yaml": {Data: []byte("")},
	}
	b, err := templates.Load(fsys, templates.LoadOptions{Name: "adopting"})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.GroupKind{{Group: "", Kind: "ConfigMap"}, {Group: "apps", Kind: "*"}}
	got := b.Permissions().Adopt
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("permissions.adopt = %+v, want %+v", got, want)
	}
	if spec := b.Spec(); len(spec.Permissions.Adopt) != 2 {
		t.Errorf("the packed spec lost permissions.adopt: %+v", spec.Permissions)
	}
}
