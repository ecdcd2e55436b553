package templates_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestWithin: a Bundle narrowed by Within renders the same content (the
// same revision, the same spec) under the policy given: its permissions
// and crds policy are those, and Skip leaves its crds/ out.
func TestWithin(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"
	own := v1alpha1.BundlePermissions{Namespaces: []string{"*"}, ClusterScoped: []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: v1alpha1.BundleSpec{
		Files:       map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "crds/w.yaml": crd},
		Permissions: own,
		CRDs:        v1alpha1.CRDsCreateReplace,
	}})
	if err != nil {
		t.Fatal(err)
	}
	narrow := v1alpha1.BundlePermissions{Namespaces: []string{"platform"}}
	n := b.Within(narrow, v1alpha1.CRDsSkip)
	if n.Revision() != b.Revision() {
		t.Errorf("revision %s, want %s: a narrowed Bundle renders the same content", n.Revision(), b.Revision())
	}
	if d := cmp.Diff(narrow, n.Permissions()); d != "" {
		t.Errorf("permissions (-want +got):\n%s", d)
	}
	if d := cmp.Diff(own, n.Spec().Permissions); d != "" {
		t.Errorf("spec.permissions (-want +got): the content is as written:\n%s", d)
	}
	if o := n.Own(); o.CRDPolicy() != v1alpha1.CRDsCreateReplace || !cmp.Equal(own, o.Permissions()) {
		t.Errorf("Own() renders under %q, %+v, want the content's own", o.CRDPolicy(), o.Permissions())
	}
	if n.CRDPolicy() != v1alpha1.CRDsSkip || b.CRDPolicy() != v1alpha1.CRDsCreateReplace {
		t.Errorf("crds policy %q (the original's %q)", n.CRDPolicy(), b.CRDPolicy())
	}
	if crds, err := n.CRDs(nil); err != nil || len(crds) != 0 {
		t.Errorf("CRDs of a Bundle within Skip = %d (%v), want none", len(crds), err)
	}
	if crds, err := b.CRDs(nil); err != nil || len(crds) != 1 {
		t.Errorf("CRDs of the Bundle itself = %d (%v), want 1", len(crds), err)
	}
	objs, err := n.Render(templates.Input{Composition: templates.CompositionInfo{Name: "c", Namespace: "ns"}})
	if err != nil || len(objs) != 1 {
		t.Errorf("render of the narrowed Bundle = %d objects (%v), want 1", len(objs), err)
	}
}
