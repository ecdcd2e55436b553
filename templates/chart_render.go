package templates

import (
	"path"
	"strings"
)

// helmNames maps the name Helm's engine gives each template of the tree
// (the root chart's name, then charts/ALIAS for each subchart on the way,
// then the path in the chart) to its bundle path, for every use of every
// chart: include (print .Template.BasePath "/x.yaml") works in a
// subchart as in Helm. The root's own templates keep their bundle paths
// as names (templates/x.yaml), and Helm's (root/templates/x.yaml) are
// mapped too.
func helmNames(root *chartNode, sources map[string]string) map[string]string {
	names := map[string]string{}
	own := map[*chartNode][]string{} // each chart's templates, by path in the chart
	var walk func(c *chartNode, full string, depth int)
	walk = func(c *chartNode, full string, depth int) {
		rels, ok := own[c]
		if !ok {
			for p := range sources {
				if rel, ok := strings.CutPrefix(p, c.file("")); ok && (isTemplate(rel) || isHelper(rel)) {
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
		for _, ch := range c.children {
			walk(ch.chart, full+"/charts/"+ch.name, depth+1)
		}
	}
	walk(root, root.name, 0)
	return names
}

// unit is a template file a render executes: a root template, or a
// subchart's, once per use of the subchart (an alias is another use).
type unit struct {
	file string // the template's bundle path, its name in the parsed set
	key  string // its output's path: file, with each subchart under its alias
	tmpl TemplateInfo
	data map[string]any // shared by the units of one chart
}

// units lists the templates a render executes with their data: the
// root's, in path order, then each enabled subchart's (not a library's),
// depth first. A subchart sees its own .Values (its parent's at its
// name), .Chart, .Files and .Template, as in Helm's engine; .Subcharts
// holds each chart's subcharts' data.
func (b *Bundle) units(data map[string]any, charts *instance) []unit {
	var units []unit
	for _, name := range b.emitted {
		units = append(units, unit{file: name, key: name, tmpl: TemplateInfo{Name: name, BasePath: "templates"}, data: data})
	}
	chart := data["Chart"].(map[string]any)
	chart["IsRoot"] = true
	subcharts := map[string]any{}
	data["Subcharts"] = subcharts
	if charts == nil {
		return units
	}
	for _, ch := range charts.children {
		units = b.subchartUnits(units, data, subcharts, ch, b.root.name, "")
	}
	return units
}

func (b *Bundle) subchartUnits(units []unit, parent, siblings map[string]any, in *instance, fullPath, dir string) []unit {
	dir = path.Join(dir, "charts", in.name)
	fullPath = fullPath + "/charts/" + in.name
	values, _ := parent["Values"].(map[string]any)[in.name].(map[string]any)
	if values == nil {
		values = map[string]any{}
	}
	chart := chartInfo(in.chart.meta)
	chart["Name"], chart["IsRoot"] = in.name, false
	subcharts := map[string]any{}
	data := map[string]any{}
	for k, v := range parent {
		data[k] = v
	}
	data["Values"], data["Chart"], data["Files"], data["Subcharts"] = values, chart, in.chart.files, subcharts
	siblings[in.name] = data
	if !in.chart.library {
		for _, file := range in.chart.emitted {
			rel := strings.TrimPrefix(file, in.chart.dir+"/")
			units = append(units, unit{
				file: file, key: dir + "/" + rel, data: data,
				tmpl: TemplateInfo{Name: fullPath + "/" + rel, BasePath: fullPath + "/templates"},
			})
		}
	}
	for _, ch := range in.children {
		units = b.subchartUnits(units, data, subcharts, ch, fullPath, dir)
	}
	return units
}
