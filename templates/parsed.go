package templates

import (
	"text/template"

	"github.com/stencil-dev/stencil/templates/chart"
)

// Parsed is a bundle's templates as a render parses them, for a tool that
// reads them instead of running them (package templates/schema/infer):
// the same files, chosen and ordered as parse chooses them, parsed with
// the render's functions, but not instrumented (package budget) and of
// every chart of the tree, whether the defaults enable it or not.
type Parsed struct {
	// Set holds every template and helper of the root and of every
	// subchart, each under its bundle path, and their defines; a
	// parent's define replaces a subchart's of the same name, as in a
	// render.
	Set *template.Template
	// Sources are the texts of the files of Set, by bundle path (chart
	// archives unpacked): a node's Pos is an offset into its file's.
	Sources map[string]string
	// HelmNames maps the names Helm gives the templates of each use of a
	// chart (root/charts/alias/templates/x.yaml, what include finds
	// through .Template.BasePath) to their bundle paths.
	HelmNames map[string]string
	// Charts are the uses of charts: the root first, then each subchart
	// under its alias, depth first (a chart used under two aliases is
	// two uses).
	Charts []ChartUse
}

// ChartUse is one use of a chart: what its templates see as .Values,
// .Chart.Name and .Template.BasePath, and which templates a render
// executes for it.
type ChartUse struct {
	// Path is the keys from the root's .Values to this use's .Values:
	// nil for the root, [alias] for a subchart, [alias, alias2] below.
	Path []string
	// Name is its .Chart.Name: a subchart's alias, else its name.
	Name string
	// Dir is the chart's folder in the bundle: "" for the root,
	// charts/a, charts/a/charts/b.
	Dir string
	// Defaults is a copy of the chart's values.yaml.
	Defaults map[string]any
	// JSONSchema is the text of the chart's values.schema.json, "" when
	// it has none.
	JSONSchema string
	// Templates are the files a render executes with this use's data,
	// in path order (none for a library chart).
	Templates []string
	// BasePath is .Template.BasePath for its templates.
	BasePath string
	// Library is set for a library chart (type: library).
	Library bool
}

// Parse parses the bundle's templates and helpers and those of every
// subchart, enabled by the defaults or not (a render parses only the
// enabled ones), as a render parses them: a file that does not parse is
// a RenderError at its file and line. The result is the caller's; the
// bundle keeps nothing of it.
func (b *Bundle) Parse() (*Parsed, error) {
	all := chart.Everything(b.root)
	names := b.parseNames(all)
	st := newBoundSetOf(nil)
	t, err := b.parseFiles(names, funcMap(st.st, st.g, b.spec.AllowNondeterministic))
	if err != nil {
		return nil, err
	}
	p := &Parsed{Set: t, Sources: make(map[string]string, len(names)), HelmNames: b.helmNames}
	for _, n := range names {
		p.Sources[n] = b.sources[n]
	}
	p.Charts = append(p.Charts, ChartUse{
		Name: b.root.Name, Defaults: chart.DeepCopy(b.defaults).(map[string]any),
		JSONSchema: b.spec.Files[SchemaFileJSON], Templates: b.emitted, BasePath: "templates",
	})
	var walk func(in *chart.Instance, path []string, full string)
	walk = func(in *chart.Instance, path []string, full string) {
		for _, ch := range in.Children {
			p2 := append(append([]string(nil), path...), ch.Name)
			f2 := full + "/charts/" + ch.Name
			p.Charts = append(p.Charts, ChartUse{
				Path: p2, Name: ch.Name, Dir: ch.Chart.Dir,
				Defaults:   chart.DeepCopy(ch.Chart.Defaults).(map[string]any),
				JSONSchema: b.sources[ch.Chart.Dir+"/"+SchemaFileJSON],
				Templates:  ch.Chart.Emitted, BasePath: f2 + "/templates", Library: ch.Chart.Library,
			})
			walk(ch, p2, f2)
		}
	}
	walk(all, nil, b.root.Name)
	return p, nil
}
