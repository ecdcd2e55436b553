package templates

import (
	"cmp"
	"path"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/values"
)

// unit is a template file a render executes: a root template, or a
// subchart's, once per use of the subchart (an alias is another use).
type unit struct {
	file string // the template's bundle path, its name in the parsed set
	key  string // its output's path: file, with each subchart under its alias
	tmpl TemplateInfo
	data map[string]any // shared by the units of one chart
}

// units lists the templates a render executes with their data, in the
// order their outputs are listed (helmOrder is the order they run in): the
// root's, in path order, then each enabled subchart's (not a library's),
// depth first. A subchart sees its own .Values (its parent's at its
// name), .Chart, .Files and .Template, as in Helm's engine; .Subcharts
// holds each chart's subcharts' data.
func (b *Bundle) units(data map[string]any, charts *chart.Instance) []unit {
	var units []unit
	for _, name := range b.emitted {
		units = append(units, unit{file: name, key: name, tmpl: TemplateInfo{Name: name, BasePath: "templates"}, data: data})
	}
	info := data["Chart"].(map[string]any)
	info["IsRoot"] = true
	subcharts := map[string]any{}
	data["Subcharts"] = subcharts
	if charts == nil {
		return units
	}
	for _, ch := range charts.Children {
		units = b.subchartUnits(units, data, subcharts, ch, b.root.Name, "")
	}
	return units
}

func (b *Bundle) subchartUnits(units []unit, parent, siblings map[string]any, in *chart.Instance, fullPath, dir string) []unit {
	dir = path.Join(dir, "charts", in.Name)
	fullPath = fullPath + "/charts/" + in.Name
	vals, _ := parent["Values"].(values.Values)[in.Name].(map[string]any)
	if vals == nil {
		vals = map[string]any{}
	}
	info := chartInfo(in.Chart.Meta)
	info["Name"], info["IsRoot"] = in.Name, false
	subcharts := map[string]any{}
	data := map[string]any{}
	for k, v := range parent {
		data[k] = v
	}
	data["Values"], data["Chart"], data["Files"], data["Subcharts"] = values.Values(vals), info, Files(in.Chart.Files), subcharts
	siblings[in.Name] = data
	if !in.Chart.Library {
		for _, file := range in.Chart.Emitted {
			rel := strings.TrimPrefix(file, in.Chart.Dir+"/")
			units = append(units, unit{
				file: file, key: dir + "/" + rel, data: data,
				tmpl: TemplateInfo{Name: fullPath + "/" + rel, BasePath: fullPath + "/templates"},
			})
		}
	}
	for _, ch := range in.Children {
		units = b.subchartUnits(units, data, subcharts, ch, fullPath, dir)
	}
	return units
}

// helmOrder is the order Helm's engine executes units in (sortTemplates
// in helm.sh/helm/v4 pkg/engine/engine.go): by the template's name in
// Helm (root/templates/x.yaml, root/charts/alias/templates/y.yaml), the
// deepest first and, at one depth, in reverse lexical order. Templates of
// one chart share their data, so the order decides what a template sees
// of the changes another made: istio's charts end with zzz_profile.yaml,
// which merges the chosen profile into .Values for every template that
// runs after it, that is, all of them. Outputs are still listed, and
// objects applied, in units' order.
func helmOrder(units []unit, root string) []unit {
	name := func(u unit) string {
		if strings.HasPrefix(u.tmpl.Name, "templates/") {
			return root + "/" + u.tmpl.Name // the root's, named templates/x.yaml in stencil
		}
		return u.tmpl.Name
	}
	out := slices.Clone(units)
	slices.SortStableFunc(out, func(a, b unit) int {
		na, nb := name(a), name(b)
		if da, db := strings.Count(na, "/"), strings.Count(nb, "/"); da != db {
			return cmp.Compare(db, da)
		}
		return strings.Compare(nb, na)
	})
	return out
}
