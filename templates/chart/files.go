package chart

import (
	"path"
	"strings"
)

// HelmFiles is .Files, what Helm's loader puts in a chart's Files
// (helm.sh/helm/v4@v4.3.1 pkg/chart/v2/loader/load.go, LoadFiles): every
// file but Chart.yaml, Chart.lock, values.yaml, values.schema.json,
// templates/** and charts/** (a charts/**.prov stays), and but
// requirements.yaml and requirements.lock unless Chart.yaml says
// apiVersion v1 (or none). stencil's own files (stencil.yaml and
// values.schema.yaml, which a folder turns into spec fields) are never
// among a Bundle's files. The map is shared by every render: templates
// cannot change it.
func HelmFiles(files map[string]string, chart map[string]any) map[string]string {
	v1 := chart["apiVersion"] == nil || chart["apiVersion"] == "v1"
	out := map[string]string{}
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

// IsText reports whether stencil reads file p of a bundle as text, which
// must then be UTF-8: a chart's (or a subchart's, under charts/NAME/)
// Chart.yaml, Chart.lock, values.yaml, values.schema.json,
// requirements.yaml and .lock, .helmignore, templates/** and crds/**,
// and the bundle's stencil.yaml, values.schema.yaml and
// kustomization.yaml. Any other file is read only through .Files, and
// may hold any bytes (kube-prometheus-stack's files/crds.bz2, which a
// template sends as a ConfigMap's binaryData with b64enc), as in Helm.
func IsText(p string) bool {
	rel := p
	for {
		rest, ok := strings.CutPrefix(rel, "charts/")
		if !ok {
			break
		}
		_, sub, ok := strings.Cut(rest, "/")
		if !ok {
			break
		}
		rel = sub
	}
	switch rel {
	case ChartFile, "Chart.lock", ValuesFile, SchemaFileJSON, "requirements.yaml", "requirements.lock", ".helmignore":
		return true
	}
	switch p {
	case "stencil.yaml", "values.schema.yaml", "kustomization.yaml":
		return true
	}
	return strings.HasPrefix(rel, "templates/") || strings.HasPrefix(rel, "crds/")
}
