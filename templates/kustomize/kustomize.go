package kustomize

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// File turns on kustomize post-processing.
const File = "kustomization.yaml"

// Run runs krusty over an in-memory filesystem holding files (a bundle's,
// with the rendered templates at their paths), and nothing else, and
// returns the objects it builds, in its order. The objects are not
// checked against each other: the caller does (MaxObjects, duplicates).
func Run(files map[string]string) ([]*unstructured.Unstructured, error) {
	t := newKustTree(files)
	fs := filesys.MakeFsInMemory()
	for _, p := range t.paths {
		content := []byte(files[p])
		if isKustomization(p) {
			var err error
			if content, err = confine(p, files[p], t); err != nil {
				return nil, err
			}
		}
		if err := fs.WriteFile("/"+p, content); err != nil {
			return nil, &fault.RenderError{File: p, Msg: err.Error(), Err: err}
		}
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig() // builtins only
	opts.PluginConfig.HelmConfig.Enabled = false     // never run helm
	resMap, err := krusty.MakeKustomizer(opts).Run(fs, "/")
	if err != nil {
		return nil, &fault.RenderError{File: File, Msg: "kustomize: " + err.Error(), Err: err}
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON, so numbers are int64 and float64 as in every
		// other unstructured object (kyaml's maps hold int).
		js, err := r.MarshalJSON()
		var m map[string]any
		if err == nil {
			err = utiljson.Unmarshal(js, &m)
		}
		if err != nil {
			return nil, &fault.RenderError{File: File, Msg: "kustomize output: " + err.Error(), Err: err}
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, &fault.RenderError{File: File, Msg: "kustomize produced an object without apiVersion, kind or metadata.name"}
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// isKustomization reports a file kustomize reads as a kustomization
// (konfig.RecognizedFileNames).
func isKustomization(p string) bool {
	switch path.Base(p) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return true
	}
	return false
}

// kustTree is what kustomize can read: the files, sorted, and their folders.
type kustTree struct {
	paths []string
	files map[string]bool
	dirs  map[string]bool // "." is the bundle's root
}

func newKustTree(files map[string]string) kustTree {
	t := kustTree{files: map[string]bool{}, dirs: map[string]bool{".": true}}
	for p := range files {
		t.paths = append(t.paths, p)
		t.files[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			t.dirs[d] = true
		}
	}
	sort.Strings(t.paths)
	return t
}

// What a location must name.
const (
	refFile         = "file"
	refFolder       = "folder"
	refFileOrFolder = "file or folder"
)

// kustRef is one field of a kustomization that kustomize reads a file
// or folder from: what it must name, and whether it is a generator's file
// source, "[key=]path".
type kustRef struct {
	field string
	p     *string
	kind  string
	keyed bool
}

// confine decodes a kustomization file as kustomize does and returns it
// re-encoded, which is exactly what krusty will read: every location
// rewritten by resolveRef, or a fault.RenderError naming file when a field runs
// code, keeps process-wide state or names something outside the bundle.
func confine(file, content string, t kustTree) ([]byte, error) {
	refuse := func(msg string) error {
		return &fault.RenderError{File: file, Msg: "kustomize: " + msg}
	}
	var k types.Kustomization
	if err := k.Unmarshal([]byte(content)); err != nil {
		return nil, &fault.RenderError{File: file, Msg: err.Error(), Err: err}
	}
	const notAllowed = " is not allowed in a bundle (no remote bases, plugins, functions, Helm or files outside the bundle)"
	switch {
	case len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0:
		return nil, refuse("Helm chart inflation" + notAllowed)
	case len(k.Generators) > 0:
		return nil, refuse("generators (plugins)" + notAllowed)
	case len(k.Transformers) > 0:
		return nil, refuse("transformers (plugins)" + notAllowed)
	case len(k.Validators) > 0:
		return nil, refuse("validators (plugins)" + notAllowed)
	case len(k.OpenAPI) > 0:
		return nil, refuse("openapi is not allowed in a bundle: kustomize keeps the schema in state shared by every render of the process")
	}
	dir := path.Dir(file)
	for _, l := range kustRefs(&k) {
		if err := resolveRef(t, dir, l); err != nil {
			return nil, refuse(err.Error())
		}
	}
	out, err := json.Marshal(k) // JSON is YAML; kustomize decodes it with the same decoder
	if err != nil {
		return nil, &fault.RenderError{File: file, Msg: err.Error(), Err: err}
	}
	return out, nil
}

// kustRefs returns every field of k that kustomize reads a file or folder
// from (as of kustomize/api v0.21.1; TestKustomizationFields fails when a
// new version adds a field). Generator file sources are "[key=]path";
// strategic merge patches that kustomize takes as inline content are not
// locations.
func kustRefs(k *types.Kustomization) []kustRef {
	var locs []kustRef
	add := func(field, kind string, p *string) {
		locs = append(locs, kustRef{field: field, p: p, kind: kind})
	}
	each := func(field, kind string, list []string) {
		for i := range list {
			add(field, kind, &list[i])
		}
	}
	// kustomize still reads these deprecated fields, so the paths they
	// name are checked as the others' are (the slices share k's arrays).
	bases, json6902, strategic := k.Bases, k.PatchesJson6902, k.PatchesStrategicMerge //nolint:staticcheck // SA1019: read on purpose, see above
	each("resources", refFileOrFolder, k.Resources)
	each("bases", refFileOrFolder, bases)
	each("components", refFolder, k.Components)
	each("crds", refFile, k.Crds)
	each("configurations", refFile, k.Configurations)
	for i := range k.Patches {
		if k.Patches[i].Path != "" {
			add("patches", refFile, &k.Patches[i].Path)
		}
	}
	for i := range json6902 {
		if json6902[i].Path != "" {
			add("patchesJson6902", refFile, &json6902[i].Path)
		}
	}
	for i := range k.Replacements {
		if k.Replacements[i].Path != "" {
			add("replacements", refFile, &k.Replacements[i].Path)
		}
	}
	if len(strategic) > 0 {
		locs = append(locs, patchRefs(strategic)...)
	}
	var kvs []*types.KvPairSources
	for i := range k.ConfigMapGenerator {
		kvs = append(kvs, &k.ConfigMapGenerator[i].KvPairSources)
	}
	for i := range k.SecretGenerator {
		kvs = append(kvs, &k.SecretGenerator[i].KvPairSources)
	}
	for _, kv := range kvs {
		for i := range kv.FileSources {
			locs = append(locs, kustRef{field: "files", p: &kv.FileSources[i], kind: refFile, keyed: true})
		}
		each("envs", refFile, kv.EnvSources)
		if kv.EnvSource != "" {
			add("env", refFile, &kv.EnvSource)
		}
	}
	return locs
}

// patchRefs returns the strategic merge patches that are paths: by
// kustomize's own rule, those that do not parse as resources.
func patchRefs(patches []types.PatchStrategicMerge) []kustRef {
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var locs []kustRef
	for i := range patches {
		if _, err := rf.SliceFromBytes([]byte(patches[i])); err != nil {
			locs = append(locs, kustRef{field: "patchesStrategicMerge", p: (*string)(&patches[i]), kind: refFile})
		}
	}
	return locs
}

// resolveRef rewrites *l.p, a location in a kustomization of folder dir, as a
// path relative to dir starting with "./" or "../" that names a file (or
// folder) of t, or returns why it cannot.
func resolveRef(t kustTree, dir string, l kustRef) error {
	loc, key := *l.p, ""
	if l.keyed && strings.Contains(loc, "=") {
		k, p, _ := strings.Cut(loc, "=")
		if k == "" || p == "" || strings.Contains(p, "=") {
			return fmt.Errorf("%s: %q is not [key=]path", l.field, loc)
		}
		key, loc = k+"=", p
	}
	if loc == "" {
		return fmt.Errorf("%s: empty path", l.field)
	}
	target := path.Join(dir, loc)
	if path.IsAbs(loc) || target == ".." || strings.HasPrefix(target, "../") {
		return fmt.Errorf("%s: path %q outside the bundle is not allowed", l.field, loc)
	}
	isFile, isDir := t.files[target], t.dirs[target]
	if found := isFile && l.kind != refFolder || isDir && l.kind != refFile; !found {
		if looksRemote(loc) {
			return fmt.Errorf("%s: remote reference %q is not allowed in a bundle: kustomize reads only the bundle's own files", l.field, loc)
		}
		return fmt.Errorf("%s: %q is not a %s of the bundle", l.field, loc, l.kind)
	}
	rel := path.Clean(loc)
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	*l.p = key + rel
	return nil
}

// looksRemote reports a location kustomize would fetch with git or HTTP
// (a scheme, git::, user@host, host:path, github.com/...), to say so in
// the error. It is not a barrier: resolveRef refuses every location that is
// not a bundle file, and rewrites one that is (even one named like a URL)
// as a "./" path, which kustomize reads locally.
func looksRemote(loc string) bool {
	first, _, _ := strings.Cut(loc, "/")
	return strings.ContainsAny(first, ":@") || strings.HasPrefix(strings.ToLower(loc), "github.com/")
}
