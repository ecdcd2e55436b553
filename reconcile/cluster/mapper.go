package cluster

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// stencilResources are stencil's own kinds, which every cluster running
// the controller serves.
var stencilResources = []templates.BuiltinResource{
	{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Bundle", Resource: "bundles", Singular: "bundle"},
	{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Kind: "Composition", Resource: "compositions", Singular: "composition", Namespaced: true},
}

// offlineResources are the kinds known without a cluster: every built-in
// kind of templates.BuiltinKubeVersion and stencil's own.
func offlineResources() []templates.BuiltinResource {
	return append(templates.BuiltinResources(), stencilResources...)
}

// OfflineRESTMapper maps, without a cluster, every kind the API server of
// templates.BuiltinKubeVersion serves by itself (templates.BuiltinResources,
// generated from that release: APIService, every cluster-scoped kind with
// its scope, alpha and beta versions) and stencil's own kinds, for
// rendering and linting offline. Kinds it does not know (custom resources)
// fail to map unless a CRD in the same render defines them.
func OfflineRESTMapper() meta.RESTMapper {
	resources := offlineResources()
	var order []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range resources {
		if gv := (schema.GroupVersion{Group: r.Group, Version: r.Version}); !seen[gv] {
			seen[gv] = true
			order = append(order, gv)
		}
	}
	m := meta.NewDefaultRESTMapper(order)
	for _, r := range resources {
		gv := schema.GroupVersion{Group: r.Group, Version: r.Version}
		scope := meta.RESTScopeRoot
		if r.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.AddSpecific(gv.WithKind(r.Kind), gv.WithResource(r.Resource), gv.WithResource(r.Singular), scope)
	}
	return m
}

// OfflineCapabilities is .Capabilities without a cluster: Kubernetes
// templates.BuiltinKubeVersion serving every built-in API version and
// kind (templates.DefaultCapabilities), and stencil's own API, which every
// cluster running the controller serves.
func OfflineCapabilities() *templates.Capabilities {
	caps := templates.DefaultCapabilities()
	for _, r := range stencilResources {
		caps.APIVersions = append(caps.APIVersions, r.GroupVersion(), r.GroupVersion()+"/"+r.Kind)
	}
	return normalizeCapabilities(caps)
}
