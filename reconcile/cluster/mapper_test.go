package cluster_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/templates"
)

// TestOfflineRESTMapper: without a cluster every built-in kind of the
// release is placed with its scope (APIService and every cluster-scoped
// kind included), and stencil's own kinds too.
func TestOfflineRESTMapper(t *testing.T) {
	m := cluster.OfflineRESTMapper()
	for _, r := range templates.BuiltinResources() {
		mapping, err := m.RESTMapping(schema.GroupKind{Group: r.Group, Kind: r.Kind}, r.Version)
		if err != nil {
			t.Errorf("%s/%s: %v", r.GroupVersion(), r.Kind, err)
			continue
		}
		if namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace; namespaced != r.Namespaced {
			t.Errorf("%s/%s: namespaced %t, want %t", r.GroupVersion(), r.Kind, namespaced, r.Namespaced)
		}
		if mapping.Resource.Resource != r.Resource {
			t.Errorf("%s/%s: resource %q, want %q", r.GroupVersion(), r.Kind, mapping.Resource.Resource, r.Resource)
		}
	}
	for gvk, namespaced := range map[schema.GroupVersionKind]bool{
		{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}: false,
		{Version: "v1", Kind: "Endpoints"}:                                   true,
		{Group: "stencil.dev", Version: "v1alpha1", Kind: "Bundle"}:          false,
		{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"}:     true,
	} {
		mapping, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil || (mapping.Scope.Name() == meta.RESTScopeNameNamespace) != namespaced {
			t.Errorf("%s: mapping %+v, err %v; want namespaced %t", gvk, mapping, err, namespaced)
		}
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1"); err == nil {
		t.Error("a custom resource mapped offline")
	}
	if !cluster.OfflineCapabilities().APIVersions.Has("stencil.dev/v1alpha1/Composition") {
		t.Error("offline capabilities lack stencil's own API")
	}
}
