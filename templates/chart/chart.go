package chart

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/schema"
	"sigs.k8s.io/yaml"
)

// Files of a chart with a meaning of their own.
const (
	// ValuesFile holds the default values.
	ValuesFile = "values.yaml"
	// SchemaFileJSON holds a JSON Schema of the values, as a Helm chart's:
	// values are validated with it, never defaulted (package schema). It
	// is a file of the bundle, in a folder and in a Bundle's spec.files.
	SchemaFileJSON = schema.JSONFile
	// ChartFile is Helm's Chart.yaml, read into .Chart.
	ChartFile = "Chart.yaml"
)

// This file holds a bundle's chart tree, as Helm loads a chart: the
// bundle is the root chart, and each folder of charts/ holding a
// Chart.yaml (or each charts/*.tgz, unpacked by archive.go) is a
// subchart, with its own subcharts. Which subcharts a render uses
// depends on the values (values.go).

// Node is one chart of the tree.
type Node struct {
	// Dir is "" for the root, else charts/a or charts/a/charts/b.
	Dir string
	// Meta is Chart.yaml as read.
	Meta map[string]any
	// Name is Chart.yaml's name.
	Name string
	// Library is set by type: library: helpers only, nothing emitted.
	Library bool
	// Defaults is the chart's values.yaml.
	Defaults   map[string]any
	jsonSchema *jsonschema.Schema
	// Files is the chart's .Files (HelmFiles), shared by every render.
	Files map[string]string
	// Children are the subcharts, each under its alias.
	Children []chartChild
	// Emitted are its templates, sorted, by bundle path.
	Emitted []string
}

// chartChild is a subchart as its parent uses it: under its alias, with
// the dependency of Chart.yaml that names it (nil when none does: a
// chart in charts/ that Chart.yaml does not list is used as it is).
type chartChild struct {
	name  string // the alias, else the chart's name
	dep   *dependency
	chart *Node
}

// dependency is an entry of Chart.yaml's dependencies.
type dependency struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	Repository   string   `json:"repository,omitempty"`
	Condition    string   `json:"condition,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Alias        string   `json:"alias,omitempty"`
	ImportValues []any    `json:"import-values,omitempty"`
}

// chartFile returns the bundle path of a chart's file.
func (c *Node) file(rel string) string {
	if c.Dir == "" {
		return rel
	}
	return c.Dir + "/" + rel
}

// LoadTree reads the subcharts of root (the bundle), whose fields
// but children are set, from sources, the bundle's files with archives
// unpacked.
func LoadTree(root *Node, sources map[string]string) error {
	subdirs := map[string][]string{} // a chart's dir → its subcharts' dirs
	for p := range sources {
		parts := strings.Split(p, "/")
		parent := ""
		// charts/a/charts/b/...: each charts/NAME level is a chart.
		for i := 0; i+2 < len(parts) && parts[i] == "charts"; i += 2 {
			dir := strings.Join(parts[:i+2], "/")
			if !slices.Contains(subdirs[parent], dir) {
				subdirs[parent] = append(subdirs[parent], dir)
			}
			parent = dir
		}
	}
	return root.loadChildren(sources, subdirs, 0)
}

// maxChartDepth bounds subcharts of subcharts.
const maxChartDepth = 16

// MaxCharts bounds the uses of charts in a bundle's tree, the root, every
// subchart and every alias counted: aliases multiply at each level (a
// chart used ten times, using one used ten times, ...), and a render
// walks every use.
const MaxCharts = 500

// CountUses returns the uses of charts under c, c included, stopping
// past max.
func (c *Node) CountUses(max int) int {
	n := 1
	for _, ch := range c.Children {
		if n > max {
			break
		}
		n += ch.chart.CountUses(max - n)
	}
	return n
}

func (c *Node) loadChildren(sources map[string]string, subdirs map[string][]string, depth int) error {
	if depth > maxChartDepth {
		return &fault.RenderError{File: c.Dir, Msg: fmt.Sprintf("subcharts nested more than %d deep", maxChartDepth)}
	}
	dirs := subdirs[c.Dir]
	sort.Strings(dirs)
	var subs []*Node
	for _, dir := range dirs {
		sub, err := loadSubchart(sources, dir)
		if err != nil {
			return err
		}
		if err := sub.loadChildren(sources, subdirs, depth+1); err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	deps, file, err := c.dependencies(sources)
	if err != nil {
		return err
	}
	return c.link(deps, file, subs)
}

// requirementsFile holds the dependencies of an apiVersion v1 chart;
// Helm's loader reads it over Chart.yaml's whatever the apiVersion.
const requirementsFile = "requirements.yaml"

// dependencies reads Chart.yaml's dependencies, or requirements.yaml's,
// and returns the file read.
func (c *Node) dependencies(sources map[string]string) ([]*dependency, string, error) {
	file, raw := c.file(ChartFile), c.Meta["dependencies"]
	if text, ok := sources[c.file(requirementsFile)]; ok {
		var req map[string]any
		if err := yaml.Unmarshal([]byte(text), &req); err != nil {
			return nil, "", &fault.RenderError{File: c.file(requirementsFile), Msg: err.Error()}
		}
		if d, ok := req["dependencies"]; ok {
			file, raw = c.file(requirementsFile), d
		}
	}
	if raw == nil {
		return nil, "", nil
	}
	data, err := yaml.Marshal(raw)
	if err != nil {
		return nil, "", &fault.RenderError{File: file, Msg: "dependencies: " + err.Error()}
	}
	var deps []*dependency
	if err := yaml.Unmarshal(data, &deps); err != nil {
		return nil, "", &fault.RenderError{File: file, Msg: "dependencies: " + err.Error()}
	}
	return deps, file, nil
}

// link matches the dependencies of Chart.yaml with the charts in
// charts/, by name, as Helm: a dependency with no chart is an error
// naming it (Helm's "found in Chart.yaml, but missing in charts/
// directory"), a chart no dependency names is used under its own name.
func (c *Node) link(deps []*dependency, file string, subs []*Node) error {
	if file == "" {
		file = c.file(ChartFile)
	}
	var missing []string
	used := map[*Node]bool{}
	for _, d := range deps {
		if d == nil {
			continue
		}
		i := slices.IndexFunc(subs, func(s *Node) bool { return s.Name == d.Name })
		if i < 0 {
			missing = append(missing, d.Name)
			continue
		}
		if err := checkVersion(file, d, subs[i]); err != nil {
			return err
		}
		used[subs[i]] = true
		name := d.Name
		if d.Alias != "" {
			name = d.Alias
		}
		c.Children = append(c.Children, chartChild{name: name, dep: d, chart: subs[i]})
	}
	if len(missing) > 0 {
		return &fault.RenderError{File: file, Msg: "found in Chart.yaml, but missing in " + c.file("charts/") + " directory: " + strings.Join(missing, ", ")}
	}
	for _, s := range subs {
		if !used[s] {
			c.Children = append(c.Children, chartChild{name: s.Name, chart: s})
		}
	}
	seen := map[string]bool{}
	for _, ch := range c.Children {
		if seen[ch.name] {
			return &fault.RenderError{File: file, Msg: fmt.Sprintf("two subcharts are named %s (give one an alias)", ch.name)}
		}
		seen[ch.name] = true
	}
	return nil
}

// checkVersion refuses a chart whose version a dependency's range
// excludes (Helm would not use it).
func checkVersion(file string, d *dependency, sub *Node) error {
	if d.Version == "" {
		return nil
	}
	con, err := semver.NewConstraint(d.Version)
	if err != nil {
		return &fault.RenderError{File: file, Msg: fmt.Sprintf("dependency %s: version %q is not a range: %v", d.Name, d.Version, err)}
	}
	v, err := semver.NewVersion(fmt.Sprint(sub.Meta["version"]))
	if err != nil || !con.Check(v) {
		return &fault.RenderError{File: sub.file(ChartFile), Msg: fmt.Sprintf("version %v does not satisfy %q, which %s asks for", sub.Meta["version"], d.Version, file)}
	}
	return nil
}

// loadSubchart reads the chart at dir: its Chart.yaml, values.yaml,
// values.schema.json, files and templates.
func loadSubchart(sources map[string]string, dir string) (*Node, error) {
	c := &Node{Dir: dir}
	files := map[string]string{}
	for p, content := range sources {
		if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
			files[rel] = content
		}
	}
	text, ok := files[ChartFile]
	if !ok {
		return nil, &fault.RenderError{File: dir, Msg: "a folder of charts/ without " + ChartFile + ": a subchart needs one"}
	}
	if err := yaml.Unmarshal([]byte(text), &c.Meta); err != nil {
		return nil, &fault.RenderError{File: c.file(ChartFile), Msg: err.Error(), Err: err}
	}
	c.Name, _ = c.Meta["name"].(string)
	if c.Name == "" {
		return nil, &fault.RenderError{File: c.file(ChartFile), Msg: "name is required"}
	}
	c.Library = c.Meta["type"] == "library"
	var err error
	if c.Defaults, err = ParseValues(files[ValuesFile]); err != nil {
		return nil, inChart(err, dir)
	}
	if s, ok := files[SchemaFileJSON]; ok {
		if c.jsonSchema, err = schema.NewJSON(s); err != nil {
			return nil, inChart(err, dir)
		}
	}
	c.Files = HelmFiles(files, c.Meta)
	for rel := range files {
		if IsTemplate(rel) && !c.Library {
			c.Emitted = append(c.Emitted, c.file(rel))
		}
	}
	sort.Strings(c.Emitted)
	return c, nil
}

// inChart makes a RenderError of a subchart's file name it by its path in
// the bundle.
func inChart(err error, dir string) error {
	var re *fault.RenderError
	if errors.As(err, &re) && re.File != "" {
		cp := *re
		cp.File = dir + "/" + re.File
		return &cp
	}
	return err
}

// Templates returns the bundle paths of the enabled subcharts' templates
// and helpers to parse, in Helm's order: the deepest paths first, then
// in reverse path order. A define parsed later replaces one of the same
// name, so a parent's replaces its subcharts' (the root's files are
// parsed after all of these). A disabled subchart is not in the tree
// (Resolve), so its files are never parsed and its defines are absent,
// as Helm removes it before parsing; nil is the root alone.
func Templates(enabled *Instance, sources map[string]string) []string {
	var names []string
	if enabled == nil {
		return nil
	}
	seen := map[*Node]bool{}
	var walk func(in *Instance)
	walk = func(in *Instance) {
		for _, ch := range in.Children {
			walk(ch)
			if seen[ch.Chart] {
				continue // an alias of a chart walked
			}
			seen[ch.Chart] = true
			for p := range sources {
				rel, ok := strings.CutPrefix(p, ch.Chart.Dir+"/")
				if ok && (IsHelper(rel) || IsTemplate(rel) && !ch.Chart.Library) {
					names = append(names, p)
				}
			}
		}
	}
	walk(enabled)
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] > names[j]
	})
	return names
}

// HelmNames maps the name Helm's engine gives each template of the tree
// (the root chart's name, then charts/ALIAS for each subchart on the way,
// then the path in the chart) to its bundle path, for every use of every
// chart: include (print .Template.BasePath "/x.yaml") works in a
// subchart as in Helm. The root's own templates keep their bundle paths
// as names (templates/x.yaml), and Helm's (root/templates/x.yaml) are
// mapped too.
func HelmNames(root *Node, sources map[string]string) map[string]string {
	names := map[string]string{}
	own := map[*Node][]string{} // each chart's templates, by path in the chart
	var walk func(c *Node, full string, depth int)
	walk = func(c *Node, full string, depth int) {
		rels, ok := own[c]
		if !ok {
			for p := range sources {
				if rel, ok := strings.CutPrefix(p, c.file("")); ok && (IsTemplate(rel) || IsHelper(rel)) {
					rels = append(rels, rel)
				}
			}
			own[c] = rels
		}
		for _, rel := range rels {
			names[full+"/"+rel] = c.file(rel)
		}
		if depth >= maxChartDepth {
			return
		}
		for _, ch := range c.Children {
			walk(ch.chart, full+"/charts/"+ch.name, depth+1)
		}
	}
	walk(root, root.Name, 0)
	return names
}

// IsTemplate reports a template Helm's engine executes: any file under
// templates/, in a subfolder too, of any extension, whose name does not
// start with "_" (helm.sh/helm/v4 pkg/chart/v2/loader puts every file of
// templates/ in a chart's templates; pkg/engine's render executes each
// but the partials). What it prints is parsed as objects, as Helm's
// releaseutil.SortManifests parses it, unless it is blank, or it is a
// NOTES.txt (package templates/notes): templates/config.txt holding an
// object is an object, templates/pod-template.tpl holding only defines
// prints nothing.
func IsTemplate(p string) bool {
	return strings.HasPrefix(p, "templates/") && !strings.HasPrefix(path.Base(p), "_")
}

// IsHelper reports a partial: a file under templates/ whose name starts
// with "_" (_helpers.tpl, _labels.yaml), parsed and shared, never
// executed on its own. A library chart's partials are all Helm parses of
// it.
func IsHelper(p string) bool {
	return strings.HasPrefix(p, "templates/") && strings.HasPrefix(path.Base(p), "_")
}

// CheckKubeVersion checks the Kubernetes version a render is for against
// Chart.yaml's kubeVersion, as Helm's install and template do (the root
// chart's only; a semver constraint, such as ">=1.25.0-0"): nil when
// meta has none or version satisfies it, else Helm's message. version is
// .Capabilities.KubeVersion as Helm prints it (v1.36.3).
func CheckKubeVersion(meta map[string]any, version string) error {
	c, constraint, err := kubeVersionConstraint(meta)
	if c == nil || err != nil {
		return err
	}
	v, err := semver.NewVersion(version)
	if err != nil || !c.Check(v) {
		return &fault.RenderError{File: ChartFile, Msg: fmt.Sprintf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", constraint, version)}
	}
	return nil
}

// ValidKubeVersion checks that Chart.yaml's kubeVersion, when set, is a
// version constraint, as Helm's loader does.
func ValidKubeVersion(meta map[string]any) error {
	_, _, err := kubeVersionConstraint(meta)
	return err
}

// kubeVersionConstraint is Chart.yaml's kubeVersion, nil when none.
func kubeVersionConstraint(meta map[string]any) (*semver.Constraints, string, error) {
	raw, ok := meta["kubeVersion"]
	if !ok || raw == nil || raw == "" {
		return nil, "", nil
	}
	constraint, ok := raw.(string)
	if !ok {
		return nil, "", &fault.RenderError{File: ChartFile, Msg: "kubeVersion must be a string (a version constraint, such as \">=1.25.0-0\")"}
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, constraint, &fault.RenderError{File: ChartFile, Msg: fmt.Sprintf("kubeVersion %q is not a version constraint: %v", constraint, err)}
	}
	return c, constraint, nil
}
