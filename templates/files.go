package templates

import (
	"encoding/base64"
	"path"
	"strings"

	"github.com/gobwas/glob"
	"sigs.k8s.io/yaml"
)

// Files is Helm's .Files: the bundle's files that are not part of the
// chart's structure (see helmFiles).
type Files map[string]string

// helmFiles is .Files, what Helm's loader puts in a chart's Files
// (helm.sh/helm/v4@v4.3.1 pkg/chart/v2/loader/load.go, LoadFiles): every
// file but Chart.yaml, Chart.lock, values.yaml, values.schema.json,
// templates/** and charts/** (a charts/**.prov stays), and but
// requirements.yaml and requirements.lock unless Chart.yaml says
// apiVersion v1 (or none). stencil's own files (stencil.yaml and
// values.schema.yaml, which a folder turns into spec fields) are never
// among a Bundle's files. The map is shared by every render: templates
// cannot change it.
func helmFiles(files map[string]string, chart map[string]any) Files {
	v1 := chart["apiVersion"] == nil || chart["apiVersion"] == "v1"
	out := Files{}
	for p, c := range files {
		switch {
		case p == ChartFile, p == "Chart.lock", p == ValuesFile, p == SchemaFileJSON,
			strings.HasPrefix(p, "templates/"),
			strings.HasPrefix(p, "charts/") && path.Ext(p) != ".prov",
			(p == "requirements.yaml" || p == "requirements.lock") && !v1:
			continue
		}
		out[p] = c
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

// Glob returns the files whose path matches pattern, as Helm's
// (pkg/engine/files.go): github.com/gobwas/glob with / as the separator,
// so * and ? stay within a folder, ** crosses folders, {a,b} is either;
// a pattern that does not compile matches every file.
func (f Files) Glob(pattern string) Files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g = glob.MustCompile("**")
	}
	out := Files{}
	for p, c := range f {
		if g.Match(p) {
			out[p] = c
		}
	}
	return out
}

// AsConfig renders the files as ConfigMap data: base name → content, as
// Helm's (no file gives "{}").
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
	data, err := yaml.Marshal(m)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}
