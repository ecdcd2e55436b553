package templates

import (
	"encoding/base64"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

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
}

// DefaultCapabilities is what templates see without a cluster: Kubernetes
// BuiltinKubeVersion serving every built-in API version and kind
// (BuiltinResources), such as "apps/v1" and "apps/v1/Deployment".
func DefaultCapabilities() *Capabilities {
	return &Capabilities{
		KubeVersion: kubeVersion(BuiltinKubeVersion),
		APIVersions: slices.Clone(builtinAPIVersions()),
	}
}

// Files is Helm's .Files: the bundle's files outside templates/.
type Files map[string]string

func (b *Bundle) files() Files {
	out := Files{}
	for p, c := range b.spec.Files {
		if !strings.HasPrefix(p, "templates/") {
			out[p] = c
		}
	}
	return out
}

// Get returns a file's content, "" when there is none.
func (f Files) Get(name string) string { return f[name] }

// GetBytes returns a file's content as bytes.
func (f Files) GetBytes(name string) []byte { return []byte(f[name]) }

// Lines returns a file's lines.
func (f Files) Lines(name string) []string {
	if f[name] == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(f[name], "\n"), "\n")
}

// Glob returns the files whose path matches pattern (path.Match syntax,
// where ** also matches across folders).
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for p, c := range f {
		if globMatch(pattern, p) {
			out[p] = c
		}
	}
	return out
}

func globMatch(pattern, p string) bool {
	if ok, _ := path.Match(pattern, p); ok {
		return true
	}
	if i := strings.Index(pattern, "**"); i >= 0 {
		prefix, suffix := pattern[:i], strings.TrimPrefix(pattern[i+2:], "/")
		if !strings.HasPrefix(p, prefix) {
			return false
		}
		rest := p[len(prefix):]
		for {
			if ok, _ := path.Match(suffix, rest); ok {
				return true
			}
			j := strings.Index(rest, "/")
			if j < 0 {
				return false
			}
			rest = rest[j+1:]
		}
	}
	return false
}

// AsConfig renders the files as ConfigMap data: base name → content.
func (f Files) AsConfig() string { return f.asMap(func(s string) string { return s }) }

// AsSecrets renders the files as Secret data: base name → base64 content.
func (f Files) AsSecrets() string {
	return f.asMap(func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) })
}

func (f Files) asMap(enc func(string) string) string {
	m := map[string]string{}
	for p, c := range f {
		m[path.Base(p)] = enc(c)
	}
	if len(m) == 0 {
		return ""
	}
	data, err := yaml.Marshal(m)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}
