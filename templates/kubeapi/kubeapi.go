package templates

import (
	"slices"
	"strings"
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

// builtinAPIVersions is the sorted VersionSet of the built-in resources:
// each group/version and each group/version/kind once.
var builtinAPIVersions = sync.OnceValue(func() VersionSet {
	set := make(VersionSet, 0, 2*len(builtinResources))
	for _, r := range builtinResources {
		set = append(set, r.GroupVersion(), r.GroupVersion()+"/"+r.Kind)
	}
	slices.Sort(set)
	return slices.Compact(set)
})

// kubeVersion parses a version such as v1.36.3 into its parts.
func kubeVersion(v string) KubeVersion {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	k := KubeVersion{Version: v}
	if len(parts) >= 2 {
		k.Major, k.Minor = parts[0], parts[1]
	}
	return k
}
