package kubeapi

import (
	"slices"
	"sync"
)

// BuiltinResource is a resource the kube-apiserver of BuiltinKubeVersion
// serves by itself (no CRD, no aggregated API server). The list is
// generated from that release's discovery documents (make generate; see
// hack/k8s/builtinapis) and holds every API it can serve, alpha and beta
// versions included, as helm template's default capabilities do.
type BuiltinResource struct {
	// Group is the API group, "" for the core group.
	Group string
	// Version is the API version, such as v1 or v1beta1.
	Version string
	// Kind is the kind, such as Deployment.
	Kind string
	// Resource is the plural resource name, such as deployments.
	Resource string
	// Singular is the singular resource name, such as deployment.
	Singular string
	// Namespaced is false for a cluster-scoped kind.
	Namespaced bool
}

// GroupVersion returns the group/version as apiVersion spells it: "v1"
// for the core group, "apps/v1" otherwise.
func (r BuiltinResource) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// BuiltinResources returns every built-in resource of BuiltinKubeVersion
// (subresources excluded), groups in the order the API server lists them
// and each group's versions in its order of preference.
func BuiltinResources() []BuiltinResource { return slices.Clone(builtinResources) }

// APIVersions returns the built-in resources' group/versions and
// group/version/kinds ("apps/v1", "apps/v1/Deployment"), sorted, each once.
func APIVersions() []string { return slices.Clone(builtinAPIVersions()) }

var builtinAPIVersions = sync.OnceValue(func() []string {
	set := make([]string, 0, 2*len(builtinResources))
	for _, r := range builtinResources {
		set = append(set, r.GroupVersion(), r.GroupVersion()+"/"+r.Kind)
	}
	slices.Sort(set)
	return slices.Compact(set)
})

// ClusterScoped reports whether group's kind is a built-in cluster-scoped
// kind: its objects are placed without a namespace whatever they say.
func ClusterScoped(group, kind string) bool { return builtinClusterScoped()[group+"/"+kind] }

// builtinClusterScoped is the set of built-in cluster-scoped kinds, as
// group/kind: their objects are placed without a namespace whatever they
// say.
var builtinClusterScoped = sync.OnceValue(func() map[string]bool {
	set := map[string]bool{}
	for _, r := range builtinResources {
		if !r.Namespaced {
			set[r.Group+"/"+r.Kind] = true
		}
	}
	return set
})
