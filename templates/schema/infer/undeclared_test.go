package infer_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/templates/schema/infer"
)

// warnings lists what Undeclared says of a bundle of files.
func warnings(t *testing.T, files map[string]string) []string {
	t.Helper()
	ws, err := infer.Undeclared(load(t, files))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

// TestUndeclared: what lint warns of, and what it does not.
func TestUndeclared(t *testing.T) {
	deploy := tpl(`  replicas: {{ .Values.replicaCount }}` + "\n" + `  port: {{ .Values.service.prot }}`)
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"values.yaml alone", map[string]string{
			"values.yaml":           "replicas: 1\nservice:\n  port: 80\n",
			"templates/deploy.yaml": deploy,
		}, []string{
			"templates/deploy.yaml:6: .Values.replicaCount is read but values.yaml does not set it (did you mean .Values.replicas?)",
			"templates/deploy.yaml:7: .Values.service.prot is read but values.yaml does not set it (did you mean .Values.service.port?)",
		}},
		{"a schema declares what values.yaml leaves out", map[string]string{
			"values.yaml":           "replicas: 1\n",
			"values.schema.json":    `{"type": "object", "properties": {"replicas": {"type": "integer"}, "service": {"type": "object", "properties": {"port": {"type": "integer"}}}}}`,
			"templates/deploy.yaml": deploy,
		}, []string{
			"templates/deploy.yaml:6: .Values.replicaCount is read but neither values.yaml nor values.schema.json declares it (did you mean .Values.replicas?)",
			"templates/deploy.yaml:7: .Values.service.prot is read but neither values.yaml nor values.schema.json declares it (did you mean .Values.service.port?)",
		}},
		{"a schema's open parts, $ref and patternProperties declare", map[string]string{
			"values.schema.json": `{"type": "object", "properties": {"free": {"type": "object"}, "ref": {"$ref": "#/$defs/r"},
			  "pat": {"type": "object", "patternProperties": {"^x-": {}}}, "ap": {"additionalProperties": {"type": "object", "properties": {"k": {}}}}},
			  "$defs": {"r": {"type": "object", "properties": {"in": {}}}}}`,
			"templates/cm.yaml": tpl(`  a: {{ .Values.free.any.thing }}{{ .Values.ref.in }}{{ .Values.ref.out }}` + "\n" +
				`  b: {{ index .Values.pat "x-a" }}{{ .Values.pat.y }}{{ .Values.ap.e.k }}{{ .Values.ap.e.l }}`),
		}, []string{
			"templates/cm.yaml:6: .Values.ref.out is read but neither values.yaml nor values.schema.json declares it",
			"templates/cm.yaml:7: .Values.ap.e.l is read but neither values.yaml nor values.schema.json declares it",
			"templates/cm.yaml:7: .Values.pat.y is read but neither values.yaml nor values.schema.json declares it",
		}},
		{"values.schema.yaml declares too", map[string]string{
			"values.schema.yaml": "type: object\nproperties:\n  a:\n    type: object\n    x-kubernetes-preserve-unknown-fields: true\n",
			"templates/cm.yaml":  tpl(`  a: {{ .Values.a.b }}{{ .Values.c }}`),
		}, []string{
			"templates/cm.yaml:6: .Values.c is read but neither values.yaml nor values.schema.yaml declares it",
		}},
		{"below {}, [] and null the user's keys", map[string]string{
			"values.yaml":       "m: {}\nl: []\nnothing: null\n",
			"templates/cm.yaml": tpl(`  a: {{ .Values.m.x }}{{ .Values.nothing.y }}{{ range .Values.l }}{{ .z }}{{ end }}`),
		}, []string{}},
		{"in helpers, through dicts and ranges, at the helper's line", map[string]string{
			"values.yaml":            "ports:\n- name: http\n",
			"templates/_helpers.tpl": "{{- define \"port\" -}}\n{{ .p.naem }}\n{{- end }}",
			"templates/cm.yaml":      tpl(`{{- range .Values.ports }}{{ include "port" (dict "p" .) }}{{ end }}`),
		}, []string{
			"templates/_helpers.tpl:2: .Values.ports[].naem is read but values.yaml does not set it (did you mean .Values.ports[].name?)",
		}},
		{"no warning where the walker does not know the path", map[string]string{
			"values.yaml": "a: {}\n",
			"templates/cm.yaml": tpl(`  a: {{ (default .Values.x .Values.y).z }}` + "\n" + // one of two values
				`  b: {{ index .Values .Values.key }}` + "\n" + // a key computed at render time
				`  c: {{ $_ := set .Values "made" 1 }}{{ .Values.made }}` + "\n" + // what a template sets
				`  d: {{ toYaml .Values.res }}{{ .Values.res.limits }}`), // below what is written out whole
		}, []string{
			"templates/cm.yaml:6: .Values.x is read but values.yaml does not set it",
			"templates/cm.yaml:6: .Values.y is read but values.yaml does not set it",
			"templates/cm.yaml:7: .Values.key is read but values.yaml does not set it",
			"templates/cm.yaml:9: .Values.res is read but values.yaml does not set it",
		}},
		{"a subchart's reads, from its own .Values; its global is the root's", map[string]string{
			"Chart.yaml":                    "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n",
			"values.yaml":                   "global:\n  region: eu\nsub:\n  given: 1\n",
			"charts/sub/Chart.yaml":         "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
			"charts/sub/values.yaml":        "size: 1\n",
			"charts/sub/templates/cm.yaml":  tpl(`  a: {{ .Values.size }}{{ .Values.given }}{{ .Values.sise }}{{ .Values.global.region }}{{ .Values.global.zone }}`),
			"charts/sub/values.schema.json": `{"type": "object", "properties": {"fromSchema": {}}}`,
			"charts/sub/templates/s.yaml":   tpl(`  s: {{ .Values.fromSchema }}`),
		}, []string{
			"charts/sub/templates/cm.yaml:6: .Values.global.zone is read but neither values.yaml nor values.schema.json declares it",
			"charts/sub/templates/cm.yaml:6: .Values.sise is read but neither values.yaml nor values.schema.json declares it (did you mean .Values.size?)",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, warnings(t, c.files)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLines: lint's lines group the paths of one line that suggest
// nothing, and keep each suggestion on a line of its own.
func TestLines(t *testing.T) {
	ws, err := infer.Undeclared(load(t, map[string]string{
		"values.yaml":            "a:\n  image: {}\nb:\n  image: {}\nc:\n  nme: x\n",
		"templates/_helpers.tpl": "{{- define \"name\" -}}\n{{ .fullnameOverride }}{{ .name }}\n{{- end }}",
		"templates/cm.yaml":      tpl(`  a: {{ include "name" .Values.a }}{{ include "name" .Values.b }}{{ include "name" .Values.c }}`),
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"templates/_helpers.tpl:2: .Values.a.fullnameOverride, .Values.a.name, .Values.b.fullnameOverride, .Values.b.name, .Values.c.fullnameOverride are read but values.yaml does not set them",
		"templates/_helpers.tpl:2: .Values.c.name is read but values.yaml does not set it (did you mean .Values.c.nme?)",
	}
	if diff := cmp.Diff(want, infer.Lines(ws)); diff != "" {
		t.Errorf("Lines (-want +got):\n%s", diff)
	}
}
