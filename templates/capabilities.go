package templates

import (
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates/kubeapi"
)

// BuiltinKubeVersion is the Kubernetes release whose API BuiltinResources
// lists: the release stencil builds its test control plane from.
const BuiltinKubeVersion = kubeapi.BuiltinKubeVersion

// BuiltinResource is a resource the kube-apiserver of BuiltinKubeVersion
// serves by itself (see package kubeapi).
type BuiltinResource = kubeapi.BuiltinResource

// BuiltinResources returns every built-in resource of BuiltinKubeVersion
// (subresources excluded), groups in the order the API server lists them
// and each group's versions in its order of preference.
func BuiltinResources() []BuiltinResource { return kubeapi.BuiltinResources() }

// BuiltinClusterScoped reports whether group/kind is a built-in kind
// served cluster-scoped.
func BuiltinClusterScoped(group, kind string) bool { return kubeapi.ClusterScoped(group, kind) }

// KubeVersion is .Capabilities.KubeVersion.
type KubeVersion struct {
	// Version is the full version, such as v1.36.0.
	Version string
	// Major and Minor are its parts, such as "1" and "36".
	Major, Minor string
}

// String returns Version, so {{ .Capabilities.KubeVersion }} prints it.
func (k KubeVersion) String() string { return k.Version }

// GitVersion is Version, as Helm also offers it.
func (k KubeVersion) GitVersion() string { return k.Version }

// VersionSet lists API versions ("apps/v1") and kinds ("apps/v1/Deployment").
type VersionSet []string

// Has reports whether the set holds an API version or version/kind.
func (v VersionSet) Has(s string) bool { return slices.Contains(v, s) }

// Capabilities is .Capabilities: what the cluster serves.
type Capabilities struct {
	// KubeVersion is the cluster's version.
	KubeVersion KubeVersion
	// APIVersions are the served group/versions and group/version/kinds.
	APIVersions VersionSet
	// ClusterScopedKinds, stencil's own, lists as group/Kind ("/Kind" for
	// the core group) the kinds the cluster serves cluster-scoped beyond
	// the built-in ones (those of CRDs and aggregated APIs), so that a
	// render placing one of them twice (once with a namespace, once
	// without) names both templates, as it does for built-in kinds.
	ClusterScopedKinds []string `json:",omitempty"`
}

// DefaultCapabilities is what templates see without a cluster: Kubernetes
// BuiltinKubeVersion serving every built-in API version and kind
// (BuiltinResources), such as "apps/v1" and "apps/v1/Deployment".
func DefaultCapabilities() *Capabilities {
	return &Capabilities{
		KubeVersion: kubeVersion(kubeapi.BuiltinKubeVersion),
		APIVersions: kubeapi.APIVersions(),
	}
}

// kubeVersion parses a version such as v1.36.3 into its parts.
func kubeVersion(v string) KubeVersion {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	k := KubeVersion{Version: v}
	if len(parts) >= 2 {
		k.Major, k.Minor = parts[0], parts[1]
	}
	return k
}
