package templates

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomize runs krusty over an in-memory filesystem holding the rendered
// templates at their paths and the bundle's other files. Remote bases,
// plugins (exec, container functions), Helm inflation and paths outside the
// bundle are refused before krusty runs.
func (b *Bundle) kustomize(outputs map[string]string) ([]*unstructured.Unstructured, error) {
	fs := filesys.MakeFsInMemory()
	paths := make([]string, 0, len(b.spec.Files))
	for p := range b.spec.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		content, rendered := outputs[p]
		if !rendered {
			if strings.HasPrefix(p, "templates/") {
				continue // helpers and unrendered files
			}
			content = b.spec.Files[p]
		}
		if isKustomization(p) {
			if err := checkKustomization(p, content); err != nil {
				return nil, err
			}
		}
		if err := fs.WriteFile("/"+p, []byte(content)); err != nil {
			return nil, &RenderError{File: p, Msg: err.Error(), Err: err}
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	resMap, err := krusty.MakeKustomizer(opts).Run(fs, "/")
	if err != nil {
		return nil, &RenderError{File: KustomizationFile, Msg: "kustomize: " + err.Error(), Err: err}
	}
	var objs []*unstructured.Unstructured
	var sources []string
	for _, r := range resMap.Resources() {
		// Through JSON, so numbers are int64 and float64 as in every
		// other unstructured object (kyaml's maps hold int).
		js, err := r.MarshalJSON()
		var m map[string]any
		if err == nil {
			err = utiljson.Unmarshal(js, &m)
		}
		if err != nil {
			return nil, &RenderError{File: KustomizationFile, Msg: "kustomize output: " + err.Error(), Err: err}
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, &RenderError{File: KustomizationFile, Msg: "kustomize produced an object without apiVersion, kind or metadata.name"}
		}
		objs = append(objs, u)
		sources = append(sources, KustomizationFile)
	}
	return objs, checkObjects(objs, sources)
}

func isKustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// checkKustomization refuses what would reach outside the bundle or run code.
func checkKustomization(file, content string) error {
	var k types.Kustomization
	if err := yaml.Unmarshal([]byte(content), &k); err != nil {
		return &RenderError{File: file, Msg: err.Error(), Err: err}
	}
	refuse := func(what string) error {
		return &RenderError{File: file, Msg: "kustomize: " + what + " is not allowed in a bundle (no remote bases, plugins, functions, Helm or files outside the bundle)"}
	}
	switch {
	case len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0:
		return refuse("Helm chart inflation")
	case len(k.Generators) > 0:
		return refuse("generators (plugins)")
	case len(k.Transformers) > 0:
		return refuse("transformers (plugins)")
	case len(k.Validators) > 0:
		return refuse("validators (plugins)")
	}
	refs := append(append(append(append([]string{}, k.Resources...), k.Components...), k.Bases...), k.Crds...)
	refs = append(refs, k.Configurations...)
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	for _, p := range k.PatchesJson6902 {
		refs = append(refs, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		if !strings.Contains(string(p), "\n") {
			refs = append(refs, string(p))
		}
	}
	for _, g := range k.ConfigMapGenerator {
		refs = append(refs, sourceFiles(g.FileSources, g.EnvSources, g.EnvSource)...)
	}
	for _, g := range k.SecretGenerator {
		refs = append(refs, sourceFiles(g.FileSources, g.EnvSources, g.EnvSource)...)
	}
	for _, r := range refs {
		if r == "" {
			continue
		}
		if strings.Contains(r, "://") || strings.HasPrefix(r, "git@") || strings.HasPrefix(r, "github.com/") {
			return refuse(fmt.Sprintf("remote reference %q", r))
		}
		clean := path.Clean(path.Join(path.Dir(file), r))
		if path.IsAbs(r) || clean == ".." || strings.HasPrefix(clean, "../") {
			return refuse(fmt.Sprintf("path %q outside the bundle", r))
		}
	}
	return nil
}

// sourceFiles returns the paths of generator sources ("key=path" or "path").
func sourceFiles(files, envs []string, env string) []string {
	var out []string
	for _, f := range files {
		if _, p, ok := strings.Cut(f, "="); ok {
			f = p
		}
		out = append(out, f)
	}
	out = append(out, envs...)
	if env != "" {
		out = append(out, env)
	}
	return out
}
