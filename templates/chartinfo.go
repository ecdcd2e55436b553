package templates

import (
	"github.com/stencil-dev/stencil/templates/chart"
)

// chartField is a field of Helm's chart metadata (chart.Metadata of
// helm.sh/helm/v4/pkg/chart/v2): its key in Chart.yaml, its name in
// .Chart, and its value when Chart.yaml leaves it out.
type chartField struct {
	key, name string
	zero      func() any
	// fields are an element's fields, for a list of maintainers or
	// dependencies.
	fields []chartField
}

func zeroString() any { return "" }
func zeroList() any   { return []any{} }

var (
	maintainerFields = []chartField{{"name", "Name", zeroString, nil}, {"email", "Email", zeroString, nil}, {"url", "URL", zeroString, nil}}
	dependencyFields = []chartField{
		{"name", "Name", zeroString, nil}, {"version", "Version", zeroString, nil}, {"repository", "Repository", zeroString, nil},
		{"condition", "Condition", zeroString, nil}, {"tags", "Tags", zeroList, nil}, {"enabled", "Enabled", func() any { return false }, nil},
		{"import-values", "ImportValues", zeroList, nil}, {"alias", "Alias", zeroString, nil},
	}
	// chartFields are Helm's, in its order.
	chartFields = []chartField{
		{"name", "Name", zeroString, nil}, {"home", "Home", zeroString, nil}, {"sources", "Sources", zeroList, nil},
		{"version", "Version", zeroString, nil}, {"description", "Description", zeroString, nil},
		{"keywords", "Keywords", zeroList, nil}, {"maintainers", "Maintainers", zeroList, maintainerFields},
		{"icon", "Icon", zeroString, nil}, {"apiVersion", "APIVersion", zeroString, nil},
		{"condition", "Condition", zeroString, nil}, {"tags", "Tags", zeroString, nil},
		{"appVersion", "AppVersion", zeroString, nil}, {"deprecated", "Deprecated", func() any { return false }, nil},
		{"annotations", "Annotations", func() any { return map[string]string(nil) }, nil},
		{"kubeVersion", "KubeVersion", zeroString, nil}, {"dependencies", "Dependencies", zeroList, dependencyFields},
		{"type", "Type", zeroString, nil},
	}
)

// chartInfo is .Chart as Helm's engine makes it from Chart.yaml: every
// field of Helm's chart metadata under its Go name (.Chart.Name,
// .Chart.APIVersion, .Chart.KubeVersion), the ones Chart.yaml leaves out
// as zero values (""; an empty list), maintainers and dependencies as
// maps of their fields; keys Helm does not know are left out. Each render
// gets its own copy: `set` on a nested map must not change the Bundle
// that concurrent renders share.
func chartInfo(meta map[string]any) map[string]any {
	return fieldsOf(meta, chartFields)
}

func fieldsOf(m map[string]any, fields []chartField) map[string]any {
	out := make(map[string]any, len(fields)+1)
	for _, f := range fields {
		v, ok := m[f.key]
		switch {
		case !ok || v == nil:
			out[f.name] = f.zero()
		case f.fields != nil:
			list, _ := v.([]any)
			elems := make([]any, len(list))
			for i, e := range list {
				em, _ := e.(map[string]any)
				elems[i] = fieldsOf(em, f.fields)
			}
			out[f.name] = elems
		default:
			out[f.name] = chart.DeepCopy(v)
		}
	}
	return out
}
