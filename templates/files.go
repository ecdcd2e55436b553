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
