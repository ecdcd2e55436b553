package infer_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

// load loads a bundle of files.
func load(t *testing.T, files map[string]string) *templates.Bundle {
	t.Helper()
	fsys := fstest.MapFS{}
	for p, c := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(c)}
	}
	b, err := templates.Load(fsys, templates.LoadOptions{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// schemaOf infers the schema of a bundle of files, as JSON decodes it.
func schemaOf(t *testing.T, files map[string]string) map[string]any {
	t.Helper()
	r, err := infer.Bundle(load(t, files))
	if err != nil {
		t.Fatal(err)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(js, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// at is the value at a path of keys ("properties/a/type") in s; a
// missing key is the string "<none>".
func at(s any, path string) any {
	cur := s
	for _, k := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "<none>"
		}
		if cur, ok = m[k]; !ok {
			return "<none>"
		}
	}
	return cur
}

// tpl is a template of one line per action given, each in a
// ConfigMap's data, so that every test template renders.
func tpl(body string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" + body + "\n"
}

// want is what a case expects at a path of the schema (at).
type want map[string]any

// TestInfer: each construct of the templates, over small bundles, and
// what it makes of the schema.
func TestInfer(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  want
	}{
		// values.yaml alone: types, defaults, nested objects, lists.
		{"values types and defaults", map[string]string{
			"values.yaml": "replicas: 2\nratio: 0.5\nname: web\nenabled: true\nimage:\n  repository: nginx\n  tag: \"\"\nnothing: null\n",
		}, want{
			"type": "object", "additionalProperties": false,
			"properties/replicas/type": "integer", "properties/replicas/default": 2.0,
			"properties/ratio/type": "number", "properties/name/type": "string", "properties/enabled/type": "boolean",
			"properties/image/type": "object", "properties/image/additionalProperties": false,
			"properties/image/properties/repository/default": "nginx",
			// null gives no shape: any value, no default.
			"properties/nothing/type": "<none>", "properties/nothing/default": "<none>",
		}},
		{"lists of objects merge their items", map[string]string{
			"values.yaml": "ports:\n- name: http\n  port: 80\n- name: grpc\n  port: 9090\n  protocol: TCP\nmixed: [1, 2.5]\nintOrString: [1, \"25%\"]\nempty: []\n",
		}, want{
			"properties/ports/type": "array", "properties/ports/items/type": "object",
			"properties/ports/items/additionalProperties":        false,
			"properties/ports/items/properties/protocol/type":    "string",
			"properties/ports/items/properties/port/type":        "integer",
			"properties/ports/default":                           []any{map[string]any{"name": "http", "port": 80.0}, map[string]any{"name": "grpc", "port": 9090.0, "protocol": "TCP"}},
			"properties/mixed/items/type":                        "number",
			"properties/intOrString/items/type":                  []any{"integer", "string"},
			"properties/empty/type":                              "array",
			"properties/empty/items":                             map[string]any{},
			"properties/ports/items/properties/name/description": "<none>",
		}},
		{"empty maps and reads only are open", map[string]string{
			"values.yaml":        "podAnnotations: {}\n",
			"templates/cm.yaml":  tpl(`  a: {{ .Values.podAnnotations.team }}` + "\n" + `  b: {{ .Values.extra.name }}`),
			"templates/_x.tpl":   `{{ define "x" }}{{ .Values.fromHelper }}{{ end }}`,
			"templates/cm2.yaml": tpl(`  c: {{ include "x" . }}`),
		}, want{
			"properties/podAnnotations/additionalProperties": true,
			"properties/podAnnotations/properties/team":      map[string]any{},
			// Known only from a read: an open object.
			"properties/extra/type": "object", "properties/extra/additionalProperties": true,
			"properties/extra/properties/name": map[string]any{},
			"properties/fromHelper":            map[string]any{},
		}},

		// Field chains, with, range, variables.
		{"field chains on a concrete object close it", map[string]string{
			"values.yaml":       "service:\n  port: 80\n",
			"templates/cm.yaml": tpl(`  port: {{ .Values.service.port }}` + "\n" + `  type: {{ .Values.service.type }}`),
		}, want{
			"properties/service/additionalProperties": false,
			"properties/service/properties/type":      map[string]any{},
			"properties/service/properties/port/type": "integer",
		}},
		{"with rebinds dot", map[string]string{
			"values.yaml":       "ingress:\n  enabled: false\n",
			"templates/cm.yaml": tpl(`{{- with .Values.ingress }}` + "\n" + `  host: {{ .host }}{{ $.Values.top }}` + "\n" + `{{- end }}`),
		}, want{
			"properties/ingress/properties/host": map[string]any{},
			"properties/top":                     map[string]any{},
		}},
		{"range over a list: dot is an item", map[string]string{
			"values.yaml":       "env:\n- name: A\n  value: \"1\"\n",
			"templates/cm.yaml": tpl(`{{- range .Values.env }}` + "\n" + `  {{ .name }}: {{ .valueFrom }}` + "\n" + `{{- end }}` + "\n" + `{{- range $i, $e := .Values.hosts }}` + "\n" + `  h{{ $i }}: {{ $e.host }}` + "\n" + `{{- end }}`),
		}, want{
			"properties/env/items/properties/valueFrom": map[string]any{},
			"properties/env/items/additionalProperties": false,
			// Ranged over but never set: a list or a map, any value.
			"properties/hosts": map[string]any{},
		}},
		{"range over a map: its keys are the user's", map[string]string{
			"values.yaml":       "labels: {}\nextraEnv:\n  A: {value: a}\n",
			"templates/cm.yaml": tpl(`{{- range $k, $v := .Values.labels }}` + "\n" + `  {{ $k }}: {{ $v.text }}` + "\n" + `{{- end }}` + "\n" + `{{- range $k, $v := .Values.extraEnv }}` + "\n" + `  {{ $k }}: {{ $v.value }}{{ $v.other }}` + "\n" + `{{- end }}`),
		}, want{
			"properties/labels/additionalProperties/type":                  "object",
			"properties/labels/additionalProperties/properties/text":       map[string]any{},
			"properties/extraEnv/additionalProperties":                     true,
			"properties/extraEnv/properties/A/properties/value/type":       "string",
			"properties/extraEnv/properties/A/properties/other":            map[string]any{},
			"properties/extraEnv/properties/A/additionalProperties":        false,
			"properties/extraEnv/properties/A/properties/value/default":    "a",
			"properties/extraEnv/properties/A/properties/other/properties": "<none>",
		}},
		{"variables and assignments", map[string]string{
			"values.yaml": "a:\n  b: 1\n",
			"templates/cm.yaml": tpl(`{{- $v := .Values.a }}` + "\n" + `  b: {{ $v.c }}` + "\n" + `{{- $w := dict }}{{ if $v.b }}{{ $w = .Values.d }}{{ end }}` + "\n" +
				`  e: {{ $w.e }}`),
		}, want{
			"properties/a/properties/c":      map[string]any{},
			"properties/d/properties/e":      map[string]any{},
			"properties/a/properties/b/type": "integer",
		}},

		// include and template, with . or $, into the define with dot's binding.
		{"include and template follow dot", map[string]string{
			"values.yaml": "image:\n  repository: nginx\n",
			"templates/_helpers.tpl": `{{- define "image" }}{{ .repository }}:{{ .tag }}{{ end }}` +
				`{{- define "ctx" }}{{ .ctx.Values.fromCtx }}{{ .v.fromV }}{{ end }}` +
				`{{- define "root" }}{{ $.Values.fromRoot }}{{ end }}`,
			"templates/cm.yaml": tpl(`  a: {{ include "image" .Values.image }}` + "\n" + `  b: {{ include "ctx" (dict "ctx" $ "v" .Values.sub) }}` + "\n" + `  c: {{ template "root" . }}`),
		}, want{
			"properties/image/properties/tag": map[string]any{},
			"properties/fromCtx":              map[string]any{},
			"properties/sub/properties/fromV": map[string]any{},
			"properties/fromRoot":             map[string]any{},
		}},
		{"include of a name computed from constants", map[string]string{
			"Chart.yaml":             "apiVersion: v2\nname: web\nversion: 1.0.0\n",
			"templates/_helpers.tpl": `{{- define "web.labels" }}{{ .Values.labelled }}{{ end }}`,
			"templates/cm.yaml":      tpl(`  a: {{ include (printf "%s.labels" .Chart.Name) . }}` + "\n" + `  b: {{ include (print $.Template.BasePath "/other.yaml") . | sha256sum }}`),
			"templates/other.yaml":   tpl(`  c: {{ .Values.fromOther }}`),
		}, want{
			"properties/labelled":  map[string]any{},
			"properties/fromOther": map[string]any{},
		}},
		{"a define calling itself over a deeper value", map[string]string{
			"values.yaml":            "args:\n  a:\n    b: 1\n",
			"templates/_helpers.tpl": `{{- define "rec" }}{{ range $k, $v := . }}{{ if kindIs "map" $v }}{{ include "rec" $v }}{{ end }}{{ end }}{{ end }}`,
			"templates/cm.yaml":      tpl(`  a: {{ include "rec" .Values.args | quote }}`),
		}, want{
			// A tree of the user's: open, of any type below the first level.
			"properties/args/additionalProperties": true,
			"properties/args/properties/a":         map[string]any{},
		}},

		// index, default, required, dig, hasKey, get.
		{"index with keys known, and computed", map[string]string{
			"values.yaml":       "m:\n  x: 1\n",
			"templates/cm.yaml": tpl(`  a: {{ index .Values "a-b" "c" }}` + "\n" + `{{- $k := "x" }}` + "\n" + `  b: {{ index .Values.n $k }}` + "\n" + `  c: {{ index .Values.m .Values.which }}`),
		}, want{
			"properties/a-b/properties/c": map[string]any{},
			// A variable holding a known string is that key.
			"properties/n/properties/x": map[string]any{},
			// A key computed at render time: m's keys are the user's.
			"properties/m/additionalProperties": true,
		}},
		{"default and required pipes", map[string]string{
			"values.yaml": "replicas: 1\n",
			"templates/cm.yaml": tpl(`  a: {{ .Values.port | default 8080 }}` + "\n" + `  b: {{ required "name!" .Values.name }}` + "\n" +
				`  c: {{ .Values.replicas | default 3 }}` + "\n" + `  d: {{ (default .Values.fallback.e .Values.primary).e }}`),
		}, want{
			"properties/port/default":     8080.0,
			"properties/name":             map[string]any{},
			"properties/replicas/default": 1.0, // values.yaml's wins
			// Read through either of two values: both take the field.
			"properties/primary/properties/e":               map[string]any{},
			"properties/fallback/properties/e/properties/e": map[string]any{},
		}},
		{"dig, hasKey, get and Values' methods", map[string]string{
			"templates/cm.yaml": tpl(`  a: {{ dig "x" "y" "d" .Values.AsMap }}` + "\n" + `  b: {{ hasKey .Values.h "k" }}` + "\n" +
				`  c: {{ get .Values.g "k" }}` + "\n" + `  d: {{ .Values.Table "t.u" }}`),
		}, want{
			"properties/x/properties/y": map[string]any{},
			"properties/h/properties/k": map[string]any{},
			"properties/g/properties/k": map[string]any{},
			"properties/t/properties/u": map[string]any{},
			"properties/AsMap":          "<none>",
		}},

		// toYaml, toJson, tpl: free-form.
		{"toYaml and toJson leave what they write open", map[string]string{
			"values.yaml": "resources:\n  limits:\n    cpu: 100m\npodSecurityContext:\n  enabled: true\n  fsGroup: 1001\nlist:\n- a: 1\nname: \"\"\n",
			"templates/cm.yaml": tpl(`  r: {{ toYaml .Values.resources | quote }}` + "\n" +
				`{{- if .Values.podSecurityContext.enabled }}` + "\n" + `  p: {{ omit .Values.podSecurityContext "enabled" | toJson | quote }}` + "\n" + `{{- end }}` + "\n" +
				`  l: {{ toJson .Values.list | quote }}` + "\n" + `  n: {{ toYaml .Values.name | quote }}`),
		}, want{
			"properties/resources/type": "object", "properties/resources/additionalProperties": true,
			// What no template reads below is not listed (any value).
			"properties/resources/properties":                       "<none>",
			"properties/podSecurityContext/additionalProperties":    true,
			"properties/podSecurityContext/properties/enabled/type": "boolean",
			"properties/podSecurityContext/properties/fsGroup":      "<none>",
			"properties/list/type":                                  "array",
			"properties/list/items/additionalProperties":            true,
			// A string written out whole may as well be a map.
			"properties/name/type": "<none>", "properties/name/default": "",
		}},
		{"tpl: any type, and the text values.yaml gives is walked", map[string]string{
			"values.yaml":            "config: |\n  level: {{ .Values.logLevel }}\n  {{ include \"more\" . }}\nlogLevel: info\n",
			"templates/_helpers.tpl": `{{ define "more" }}{{ .Values.fromTpl }}{{ end }}`,
			"templates/cm.yaml":      tpl(`  c: {{ tpl .Values.config . | quote }}` + "\n" + `  t: {{ tpl .Values.template . | quote }}`),
		}, want{
			"properties/config/type": "<none>", "properties/config/default": "level: {{ .Values.logLevel }}\n{{ include \"more\" . }}\n",
			"properties/fromTpl":  map[string]any{},
			"properties/template": map[string]any{},
		}},
		{"a type test leaves any type", map[string]string{
			"values.yaml":       "value: \"\"\n",
			"templates/cm.yaml": tpl(`  v: {{ if kindIs "string" .Values.value }}{{ .Values.value }}{{ end }}`),
		}, want{
			"properties/value/type": "<none>", "properties/value/default": "",
		}},
		{"set and merge write", map[string]string{
			"values.yaml":       "a:\n  b: 1\n",
			"templates/cm.yaml": tpl(`{{- $_ := set .Values.a "c" 2 }}` + "\n" + `  c: {{ .Values.a.c }}`),
		}, want{
			"properties/a/properties/c":         map[string]any{},
			"properties/a/additionalProperties": false,
		}},
		{"a subchart's values are under its alias, its global is the root's", map[string]string{
			"Chart.yaml":                   "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: 1.0.0\n  alias: s\n",
			"values.yaml":                  "s:\n  given: 1\n",
			"templates/cm.yaml":            tpl(`  p: {{ .Subcharts.s.Values.fromParent }}`),
			"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
			"charts/sub/values.yaml":       "size: 1\nglobal:\n  region: eu\n",
			"charts/sub/templates/cm.yaml": tpl(`  a: {{ .Values.size }}{{ .Values.extra }}{{ .Values.global.zone }}`),
		}, want{
			"properties/s/properties/size/type":        "integer",
			"properties/s/properties/given/type":       "integer",
			"properties/s/properties/extra":            map[string]any{},
			"properties/s/properties/fromParent":       map[string]any{},
			"properties/s/additionalProperties":        false,
			"properties/s/properties/global":           map[string]any{"$ref": "#/properties/global"},
			"properties/global/properties/region/type": "string",
			"properties/global/properties/zone":        map[string]any{},
		}},
		{"a chart's global is open", map[string]string{
			"values.yaml":       "global:\n  imageRegistry: \"\"\n",
			"templates/cm.yaml": tpl(`  r: {{ .Values.global.imageRegistry }}`),
		}, want{
			"properties/global/additionalProperties":          true,
			"properties/global/properties/imageRegistry/type": "string",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := schemaOf(t, c.files)
			if s["$schema"] != infer.SchemaDraft {
				t.Errorf("$schema = %v, want %s", s["$schema"], infer.SchemaDraft)
			}
			for path, w := range c.want {
				if diff := cmp.Diff(w, at(s, path)); diff != "" {
					js, _ := json.MarshalIndent(s, "", "  ")
					t.Errorf("%s (-want +got):\n%s\nschema:\n%s", path, diff, js)
				}
			}
		})
	}
}

// TestInferOddTemplates: templates that fail at render time, or hold
// themselves, are walked without a panic and to an end.
func TestInferOddTemplates(t *testing.T) {
	for name, body := range map[string]string{
		"calls without arguments": `{{ pick }}{{ dig }}{{ index }}{{ set }}{{ merge }}{{ include }}{{ tpl }}{{ default }}{{ first }}{{ dict "a" }}{{ printf }}`,
		"a dict holding itself":   `{{ $d := dict }}{{ $_ := set $d "self" (dict "d" $d) }}{{ $_ := set $d "self" (dict "d" $d) }}{{ $e := merge $d $d.self }}{{ toYaml $e }}{{ $d.self.d.self.d.x }}`,
		"a define calling itself": `{{ define "loop" }}{{ include "loop" (dict "v" .) }}{{ end }}{{ include "loop" .Values }}`,
		"range over a number":     `{{ range $i := 3 }}{{ $i }}{{ end }}{{ range until 3 }}{{ . }}{{ end }}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := infer.Bundle(load(t, map[string]string{"templates/cm.yaml": body}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.JSON(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
