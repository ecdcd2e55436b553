package templates

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// This file holds a bundle's chart tree, as Helm loads a chart: the
// bundle is the root chart, and each folder of charts/ holding a
// Chart.yaml (or each charts/*.tgz, unpacked by chart_archive.go) is a
// subchart, with its own subcharts. Which subcharts a render uses
// depends on the values (chart_deps.go).

// chartNode is one chart of the tree.
type chartNode struct {
	dir        string // "" for the root, else charts/a or charts/a/charts/b
	meta       map[string]any
	name       string // Chart.yaml's name
	library    bool   // type: library: helpers only, nothing emitted
	defaults   map[string]any
	jsonSchema *jsonschema.Schema
	files      Files
	children   []chartChild
	emitted    []string // its templates, sorted, by bundle path
}

// chartChild is a subchart as its parent uses it: under its alias, with
// the dependency of Chart.yaml that names it (nil when none does: a
// chart in charts/ that Chart.yaml does not list is used as it is).
type chartChild struct {
	name  string // the alias, else the chart's name
	dep   *dependency
	chart *chartNode
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
func (c *chartNode) file(rel string) string {
	if c.dir == "" {
		return rel
	}
	return c.dir + "/" + rel
}

// loadChartTree reads the subcharts of root (the bundle), whose fields
// but children are set, from sources, the bundle's files with archives
// unpacked.
func loadChartTree(root *chartNode, sources map[string]string) error {
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

// countUses returns the uses of charts under c, c included, stopping
// past max.
func (c *chartNode) countUses(max int) int {
	n := 1
	for _, ch := range c.children {
		if n > max {
			break
		}
		n += ch.chart.countUses(max - n)
	}
	return n
}

func (c *chartNode) loadChildren(sources map[string]string, subdirs map[string][]string, depth int) error {
	if depth > maxChartDepth {
		return &RenderError{File: c.dir, Msg: fmt.Sprintf("subcharts nested more than %d deep", maxChartDepth)}
	}
	dirs := subdirs[c.dir]
	sort.Strings(dirs)
	var subs []*chartNode
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
func (c *chartNode) dependencies(sources map[string]string) ([]*dependency, string, error) {
	file, raw := c.file(ChartFile), c.meta["dependencies"]
	if text, ok := sources[c.file(requirementsFile)]; ok {
		var req map[string]any
		if err := yaml.Unmarshal([]byte(text), &req); err != nil {
			return nil, "", &RenderError{File: c.file(requirementsFile), Msg: err.Error()}
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
		return nil, "", &RenderError{File: file, Msg: "dependencies: " + err.Error()}
	}
	var deps []*dependency
	if err := yaml.Unmarshal(data, &deps); err != nil {
		return nil, "", &RenderError{File: file, Msg: "dependencies: " + err.Error()}
	}
	return deps, file, nil
}

// link matches the dependencies of Chart.yaml with the charts in
// charts/, by name, as Helm: a dependency with no chart is an error
// naming it (Helm's "found in Chart.yaml, but missing in charts/
// directory"), a chart no dependency names is used under its own name.
func (c *chartNode) link(deps []*dependency, file string, subs []*chartNode) error {
	if file == "" {
		file = c.file(ChartFile)
	}
	var missing []string
	used := map[*chartNode]bool{}
	for _, d := range deps {
		if d == nil {
			continue
		}
		i := slices.IndexFunc(subs, func(s *chartNode) bool { return s.name == d.Name })
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
		c.children = append(c.children, chartChild{name: name, dep: d, chart: subs[i]})
	}
	if len(missing) > 0 {
		return &RenderError{File: file, Msg: "found in Chart.yaml, but missing in " + c.file("charts/") + " directory: " + strings.Join(missing, ", ")}
	}
	for _, s := range subs {
		if !used[s] {
			c.children = append(c.children, chartChild{name: s.name, chart: s})
		}
	}
	seen := map[string]bool{}
	for _, ch := range c.children {
		if seen[ch.name] {
			return &RenderError{File: file, Msg: fmt.Sprintf("two subcharts are named %s (give one an alias)", ch.name)}
		}
		seen[ch.name] = true
	}
	return nil
}

// checkVersion refuses a chart whose version a dependency's range
// excludes (Helm would not use it).
func checkVersion(file string, d *dependency, sub *chartNode) error {
	if d.Version == "" {
		return nil
	}
	con, err := semver.NewConstraint(d.Version)
	if err != nil {
		return &RenderError{File: file, Msg: fmt.Sprintf("dependency %s: version %q is not a range: %v", d.Name, d.Version, err)}
	}
	v, err := semver.NewVersion(fmt.Sprint(sub.meta["version"]))
	if err != nil || !con.Check(v) {
		return &RenderError{File: sub.file(ChartFile), Msg: fmt.Sprintf("version %v does not satisfy %q, which %s asks for", sub.meta["version"], d.Version, file)}
	}
	return nil
}

// loadSubchart reads the chart at dir: its Chart.yaml, values.yaml,
// values.schema.json, files and templates.
func loadSubchart(sources map[string]string, dir string) (*chartNode, error) {
	c := &chartNode{dir: dir}
	files := map[string]string{}
	for p, content := range sources {
		if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
			files[rel] = content
		}
	}
	text, ok := files[ChartFile]
	if !ok {
		return nil, &RenderError{File: dir, Msg: "a folder of charts/ without " + ChartFile + ": a subchart needs one"}
	}
	if err := yaml.Unmarshal([]byte(text), &c.meta); err != nil {
		return nil, &RenderError{File: c.file(ChartFile), Msg: err.Error(), Err: err}
	}
	c.name, _ = c.meta["name"].(string)
	if c.name == "" {
		return nil, &RenderError{File: c.file(ChartFile), Msg: "name is required"}
	}
	c.library = c.meta["type"] == "library"
	var err error
	if c.defaults, err = parseValuesFile(files[ValuesFile]); err != nil {
		return nil, inChart(err, dir)
	}
	if s, ok := files[SchemaFileJSON]; ok {
		if c.jsonSchema, err = newJSONSchema(s); err != nil {
			return nil, inChart(err, dir)
		}
	}
	c.files = helmFiles(files, c.meta)
	for rel := range files {
		if isTemplate(rel) && !c.library {
			c.emitted = append(c.emitted, c.file(rel))
		}
	}
	sort.Strings(c.emitted)
	return c, nil
}

// inChart makes a RenderError of a subchart's file name it by its path in
// the bundle.
func inChart(err error, dir string) error {
	if re, ok := err.(*RenderError); ok && re.File != "" {
		cp := *re
		cp.File = dir + "/" + re.File
		return &cp
	}
	return err
}

// chartTemplates returns the bundle paths of the subcharts' templates
// and helpers to parse, in Helm's order: the deepest paths first, then
// in reverse path order. A define parsed later replaces one of the same
// name, so a parent's replaces its subcharts' (the root's files are
// parsed after all of these).
func chartTemplates(root *chartNode, sources map[string]string) []string {
	var names []string
	seen := map[*chartNode]bool{}
	var walk func(c *chartNode)
	walk = func(c *chartNode) {
		for _, ch := range c.children {
			if seen[ch.chart] {
				continue // an alias of a chart walked
			}
			seen[ch.chart] = true
			walk(ch.chart)
			for p := range sources {
				rel, ok := strings.CutPrefix(p, ch.chart.dir+"/")
				if ok && (isHelper(rel) || isTemplate(rel) && !ch.chart.library) {
					names = append(names, p)
				}
			}
		}
	}
	walk(root)
	sort.Slice(names, func(i, j int) bool {
		di, dj := strings.Count(names[i], "/"), strings.Count(names[j], "/")
		if di != dj {
			return di > dj
		}
		return names[i] > names[j]
	})
	return names
}
