package templates

import (
	"regexp"
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

// String returns Version as Helm prints it: major.minor.patch, without a
// suffix (a cluster's v1.33.4-gke.1245000 prints v1.33.4), so
// {{ .Capabilities.KubeVersion }} and Chart.yaml's kubeVersion check see
// what Helm's do.
func (k KubeVersion) String() string {
	m := plainVersion.FindStringSubmatch(k.Version)
	if m == nil {
		return k.Version
	}
	return "v" + m[1]
}

// plainVersion is the major.minor.patch a version starts with.
var plainVersion = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)`)

// GitVersion is Version, as Helm also offers it.
func (k KubeVersion) GitVersion() string { return k.Version }

// HelmVersion is .Capabilities.HelmVersion: the Helm release whose
// templates stencil renders as (Helm's BuildInfo, the fields a build
// sets left empty, so a render is the same on every machine).
type HelmVersion struct {
	// Version is Helm's version, such as v4.3.1.
	Version string
	// GitCommit, GitTreeState and GoVersion are empty: they describe a
	// build of Helm, and stencil is none.
	GitCommit, GitTreeState, GoVersion string
	// KubeClientVersion is the version of the Kubernetes client that
	// Helm release is built with, as Helm names it (v1.37).
	KubeClientVersion string
}

// HelmRelease is the Helm release stencil follows: its template
// functions, built-in objects and chart rules (docs/helm.md).
const HelmRelease = "v4.3.1"

// helmVersion is .Capabilities.HelmVersion.
var helmVersion = HelmVersion{Version: HelmRelease, KubeClientVersion: "v1.37"}

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
	// HelmVersion is always HelmRelease's, whatever the caller sets.
	HelmVersion HelmVersion `json:"-"`
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
