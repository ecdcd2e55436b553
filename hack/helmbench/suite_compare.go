package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/templates"
)

// A suite chart is rendered as `helm template CHART` renders it: release
// "release-name" in namespace "default", an install, revision 1, the
// chart's default values, Kubernetes v1.36.3 serving stencil's offline
// list of APIs, every lookup answered empty (offline). stencil renders
// it with the same inputs (templates.Load, templates.Render with no
// Lookups and no Generated values).
var suiteRelease = templates.CompositionInfo{Name: "release-name", Namespace: "default", UID: "1234"}

// suiteCapabilities are Helm's capabilities of stencil's offline render:
// its Kubernetes version and API list (DefaultCapabilities).
var suiteCapabilities = func() *common.Capabilities {
	def := templates.DefaultCapabilities()
	caps := *common.DefaultCapabilities
	caps.KubeVersion = common.KubeVersion{Version: def.KubeVersion.Version, Major: def.KubeVersion.Major, Minor: def.KubeVersion.Minor}
	caps.APIVersions = common.VersionSet(def.APIVersions)
	return &caps
}()

// Rendered is a chart's objects by ObjectKey, each as its JSON reads into
// a map (numbers as float64, whichever engine printed them).
type Rendered map[string]map[string]any

// ObjectKey names an object: apiVersion, kind, namespace (as rendered, ""
// when the template sets none) and name.
func ObjectKey(o map[string]any) string {
	meta, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v %v/%v", o["apiVersion"], o["kind"], meta["namespace"], meta["name"])
}

// Comparison is what CompareSuite found for one chart.
type Comparison struct {
	// Objects is how many objects Helm's engine rendered (test hooks left
	// out); Random are the fields masked, by object.
	Objects int
	Random  map[string][]Path
	// CRDs is how many objects the crds/ folders of the chart and its
	// enabled subcharts hold (Helm's --include-crds), compared as the
	// templates' objects are.
	CRDs int
	// Notes is the root chart's templates/NOTES.txt as Helm's install
	// keeps it (pkg/action's renderResources), spaces around trimmed,
	// compared with stencil's (templates.Input.Notes) unless the two Helm
	// renders print different notes (NotesRandom).
	Notes       string
	NotesRandom bool
	// Diffs are the differences, one per object: none when stencil's
	// objects are Helm's.
	Diffs []string
}

// CompareSuite assembles chart c, renders it twice with Helm's engine and
// once with stencil's, masks in Helm's first render and in stencil's the
// fields the two Helm renders disagree on, and compares them object by
// object; then it compares the CRDs of the crds/ folders, which are not
// templated, as `helm template --include-crds` prints them and as
// templates.Bundle.CRDs lists them.
func CompareSuite(c SuiteChart) (Comparison, error) {
	var cmpn Comparison
	dir, err := SuiteDir(c)
	if err != nil {
		return cmpn, err
	}
	h1, hcrds, notes1, err := SuiteHelm(c, dir)
	if err != nil {
		return cmpn, fmt.Errorf("helm: %w", err)
	}
	h2, _, notes2, err := SuiteHelm(c, dir)
	if err != nil {
		return cmpn, fmt.Errorf("helm: %w", err)
	}
	if cmpn.Random, err = RandomFields(h1, h2); err != nil {
		return cmpn, err
	}
	s, scrds, snotes, err := SuiteStencil(c, dir)
	if err != nil {
		return cmpn, fmt.Errorf("stencil: %w", err)
	}
	Mask(h1, cmpn.Random)
	Mask(s, cmpn.Random)
	cmpn.Objects, cmpn.CRDs = len(h1), len(hcrds)
	cmpn.Diffs = append(diffRendered(h1, s, ""), diffRendered(hcrds, scrds, "crds/: ")...)
	cmpn.Notes, cmpn.NotesRandom = notes1, notes1 != notes2
	if diff := cmp.Diff(notes1, snotes); diff != "" && !cmpn.NotesRandom {
		cmpn.Diffs = append(cmpn.Diffs, "templates/NOTES.txt differs (-helm +stencil):\n"+diff)
	}
	return cmpn, nil
}

// diffRendered is one difference per object between Helm's objects h and
// stencil's s, each prefixed with prefix.
func diffRendered(h, s Rendered, prefix string) []string {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if _, ok := s[k]; !ok {
			diffs = append(diffs, prefix+"stencil did not render "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		o, ok := h[k]
		if !ok {
			diffs = append(diffs, prefix+"stencil rendered "+k+", Helm did not")
		} else if diff := cmp.Diff(o, s[k]); diff != "" {
			diffs = append(diffs, fmt.Sprintf("%s%s differs (-helm +stencil):\n%s", prefix, k, diff))
		}
	}
	return diffs
}

// SuiteHelm renders the chart folder dir of c, with its values
// (suiteValues), as `helm
// template --skip-tests` does (action.Install's steps for a client-only dry run):
// ProcessDependencies (conditions, tags, import-values), the Chart.yaml
// kubeVersion check, values and schema validation, engine.Render,
// NOTES.txt taken out (the root's returned as notes, as `helm install`
// keeps it), releaseutil.SortManifests, test hooks left out.
// .Release.Service is "stencil", stencil's, rather than "Helm", so that
// the managed-by labels and checksums of text holding it are the same
// in both.
//
// It also returns the objects of the crds/ folders of the chart and its
// enabled subcharts (chart.CRDObjects), which `helm template
// --include-crds` prints, untemplated, before the others.
func SuiteHelm(sc SuiteChart, dir string) (r, crds Rendered, notes string, err error) {
	text, err := suiteValues(sc, dir)
	if err != nil {
		return nil, nil, "", err
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &vals); err != nil {
		return nil, nil, "", fmt.Errorf("values: %w", err)
	}
	c, err := loaderv2.Load(dir)
	if err != nil {
		return nil, nil, "", err
	}
	if err := chartutil.ProcessDependencies(c, vals); err != nil {
		return nil, nil, "", err
	}
	if c.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, suiteCapabilities.KubeVersion.String()) {
		return nil, nil, "", fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, suiteCapabilities.KubeVersion.Version)
	}
	crds = Rendered{}
	for _, crd := range c.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			if err := crds.add(crd.Filename, doc); err != nil {
				return nil, nil, "", err
			}
		}
	}
	r, notes, err = helmRenderChart(c, vals)
	return r, crds, notes, err
}

// add reads the YAML document doc of file name into r, unless it is
// empty; an object already in r is an error.
func (r Rendered) add(name, doc string) error {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc+"\n"), &m); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(m) == 0 {
		return nil
	}
	k := ObjectKey(m)
	if _, dup := r[k]; dup {
		return fmt.Errorf("%s: %s rendered twice", name, k)
	}
	r[k] = m
	return nil
}

// helmRenderChart renders c with values as `helm template` does, and
// returns its objects and the root chart's notes, as `helm install`
// keeps them (pkg/action's renderResources: every file ending in
// NOTES.txt taken out, the root's kept) and prints them (trimmed).
func helmRenderChart(c *chartv2.Chart, values map[string]any) (Rendered, string, error) {
	opts := common.ReleaseOptions{Name: suiteRelease.Name, Namespace: suiteRelease.Namespace, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValuesWithSchemaValidation(c, values, opts, suiteCapabilities, false)
	if err != nil {
		return nil, "", err
	}
	vals["Release"].(map[string]any)["Service"] = "stencil"
	out, err := engine.Render(c, vals)
	if err != nil {
		return nil, "", err
	}
	notes := strings.TrimSpace(out[path.Join(c.Name(), "templates", "NOTES.txt")])
	for name := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(out, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(out, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, "", err
	}
	r := Rendered{}
	for _, m := range manifests {
		if err := r.add(m.Name, m.Content); err != nil {
			return nil, "", err
		}
	}
	for _, h := range hooks {
		if slices.Contains(h.Events, releasev1.HookTest) {
			continue
		}
		if err := r.add(h.Path, h.Manifest); err != nil {
			return nil, "", err
		}
	}
	return r, notes, nil
}

// SuiteStencil renders the chart folder dir of c with stencil's engine,
// offline, its values (suiteValues) the Composition's, and lists its crds/
// objects (Bundle.CRDs) for those values, and its notes. Test hooks and hooks Helm does not know are left out, as
// `helm template --skip-tests` leaves them out (helmSkips).
func SuiteStencil(c SuiteChart, dir string) (r, crds Rendered, notes string, err error) {
	b, err := suiteLoad(c, dir)
	if err != nil {
		return nil, nil, "", err
	}
	text, err := suiteValues(c, dir)
	if err != nil {
		return nil, nil, "", err
	}
	r, crds, notes, err = stencilRender(b, text)
	return r, crds, notes, err
}

// stencilRender renders b offline for suiteRelease with the values of the
// YAML text, as SuiteStencil.
func stencilRender(b *templates.Bundle, text string) (r, crds Rendered, notes string, err error) {
	var values *apiextensionsv1.JSON
	if text != "" {
		js, err := yaml.YAMLToJSON([]byte(text))
		if err != nil {
			return nil, nil, "", fmt.Errorf("values: %w", err)
		}
		values = &apiextensionsv1.JSON{Raw: js}
	}
	var n templates.Notes
	objs, err := templates.Render(b, templates.Input{Composition: suiteRelease, Values: values, Notes: &n})
	if err != nil {
		return nil, nil, "", err
	}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
		hook, ok := o.GetAnnotations()["helm.sh/hook"]
		return helmSkips(hook, ok)
	})
	crdObjs, err := b.CRDs(values)
	if err != nil {
		return nil, nil, "", fmt.Errorf("crds/: %w", err)
	}
	if r, err = toRendered(objs); err != nil {
		return nil, nil, "", err
	}
	crds, err = toRendered(crdObjs)
	return r, crds, n.Text, err
}

// toRendered is objs by ObjectKey, each read back from its JSON.
func toRendered(objs []*unstructured.Unstructured) (Rendered, error) {
	r := Rendered{}
	for _, o := range objs {
		data, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		k := ObjectKey(m)
		if _, dup := r[k]; dup {
			return nil, fmt.Errorf("%s rendered twice", k)
		}
		r[k] = m
	}
	return r, nil
}

// suiteValues is the YAML of the values c gives both engines: c.Values,
// or the file c.ValuesFile of the chart folder dir.
func suiteValues(c SuiteChart, dir string) (string, error) {
	if c.ValuesFile == "" {
		return c.Values, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.ValuesFile)))
	return string(data), err
}

// suiteLoad loads the chart folder dir as a Bundle, with stencil.yaml
// allowing nondeterministic functions when c says so.
func suiteLoad(c SuiteChart, dir string) (*templates.Bundle, error) {
	if !c.AllowNondeterministic {
		return StencilLoad(dir)
	}
	fsys := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fsys[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, ok := fsys[templates.OptionsFile]; ok {
		return nil, fmt.Errorf("%s has a %s of its own", dir, templates.OptionsFile)
	}
	fsys[templates.OptionsFile] = &fstest.MapFile{Data: []byte("allowNondeterministic: true\n")}
	return templates.Load(fsys, templates.LoadOptions{Name: filepath.Base(dir)})
}

// helmSkips reports whether `helm template --skip-tests` leaves out an
// object with this helm.sh/hook annotation, as Helm's SortManifests reads
// it (a comma list, case and spaces ignored): a test hook (test, or
// test-success), or a hook of a type Helm does not know, which it skips
// ("skipping unknown hooks"). Applied to stencil's objects, it leaves out
// what Helm's side leaves out.
func helmSkips(hook string, ok bool) bool {
	if !ok {
		return false
	}
	for p := range strings.SplitSeq(hook, ",") {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "pre-install", "post-install", "pre-delete", "post-delete",
			"pre-upgrade", "post-upgrade", "pre-rollback", "post-rollback":
		default:
			return true
		}
	}
	return false
}

// Masked is the mark that replaces a value two Helm renders of a chart
// disagree on.
const Masked = "(random)"

// Path is where a value is in an object: map keys, and list indexes
// written "[N]".
type Path []string

// String is the path as text: keys joined by dots, indexes appended.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// RandomFields are the fields whose values differ between two renders
// a and b of one chart (random passwords, UUIDs, generated keys and
// certificates, and what is computed from them, such as checksums), by
// object key. It fails when the two do not render the same objects,
// whose names then are random.
func RandomFields(a, b Rendered) (map[string][]Path, error) {
	if ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b)); !slices.Equal(ka, kb) {
		return nil, fmt.Errorf("two Helm renders give different objects:\n%v\n%v", ka, kb)
	}
	out := map[string][]Path{}
	for k, o := range a {
		var paths []Path
		diffPaths(nil, o, b[k], &paths)
		if len(paths) > 0 {
			out[k] = paths
		}
	}
	return out, nil
}

// diffPaths appends to paths the path of each value where x and y differ:
// maps and lists of one length are compared member by member.
func diffPaths(path Path, x, y any, paths *[]Path) {
	switch xv := x.(type) {
	case map[string]any:
		if yv, ok := y.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(xv)) {
				diffPaths(append(slices.Clip(path), k), xv[k], yv[k], paths)
			}
			for _, k := range slices.Sorted(maps.Keys(yv)) {
				if _, ok := xv[k]; !ok {
					*paths = append(*paths, append(slices.Clip(path), k))
				}
			}
			return
		}
	case []any:
		if yv, ok := y.([]any); ok && len(xv) == len(yv) {
			for i := range xv {
				diffPaths(append(slices.Clip(path), "["+strconv.Itoa(i)+"]"), xv[i], yv[i], paths)
			}
			return
		}
	}
	if !reflect.DeepEqual(x, y) {
		*paths = append(*paths, path)
	}
}

// Mask replaces, in each object of r that random names, the value at each
// of its paths with Masked (a path the object lacks is left alone: the
// comparison shows it).
func Mask(r Rendered, random map[string][]Path) {
	for k, paths := range random {
		if o, ok := r[k]; ok {
			for _, p := range paths {
				setPath(o, p)
			}
		}
	}
}

func setPath(o map[string]any, path Path) {
	var cur any = o
	for i, part := range path {
		last := i == len(path)-1
		switch c := cur.(type) {
		case map[string]any:
			if _, ok := c[part]; !ok {
				return
			}
			if last {
				c[part] = Masked
				return
			}
			cur = c[part]
		case []any:
			n, err := strconv.Atoi(strings.Trim(part, "[]"))
			if err != nil || n >= len(c) {
				return
			}
			if last {
				c[n] = Masked
				return
			}
			cur = c[n]
		default:
			return
		}
	}
}
