package templates_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/templates"
)

// TestParse: Parse parses every chart, a disabled subchart too, as a
// render parses them (a parent's define wins, the trees as written), and
// lists each use of a chart with what its templates see.
func TestParse(t *testing.T) {
	files := fstest.MapFS{
		"Chart.yaml":                      {Data: []byte("apiVersion: v2\nname: shop\nversion: 1.0.0\ndependencies:\n- name: cache\n  version: 0.1.0\n  alias: c\n  condition: c.enabled\n")},
		"values.yaml":                     {Data: []byte("c:\n  enabled: false\n")},
		"templates/cm.yaml":               {Data: []byte("{{ include \"name\" . }}\n")},
		"templates/_helpers.tpl":          {Data: []byte(`{{ define "name" }}root{{ end }}`)},
		"charts/cache/Chart.yaml":         {Data: []byte("apiVersion: v2\nname: cache\nversion: 0.1.0\n")},
		"charts/cache/values.yaml":        {Data: []byte("size: 1\n")},
		"charts/cache/values.schema.json": {Data: []byte(`{"type": "object"}`)},
		"charts/cache/templates/x.yaml":   {Data: []byte("{{ .Values.size }}\n")},
		"charts/cache/templates/_h.tpl":   {Data: []byte(`{{ define "name" }}cache{{ end }}`)},
	}
	b, err := templates.Load(files, templates.LoadOptions{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Parse()
	if err != nil {
		t.Fatal(err)
	}
	want := []templates.ChartUse{
		{Name: "shop", Defaults: map[string]any{"c": map[string]any{"enabled": false}}, Templates: []string{"templates/cm.yaml"}, BasePath: "templates"},
		{Path: []string{"c"}, Name: "c", Dir: "charts/cache", Defaults: map[string]any{"size": int64(1)}, JSONSchema: `{"type": "object"}`,
			Templates: []string{"charts/cache/templates/x.yaml"}, BasePath: "shop/charts/c/templates"},
	}
	if diff := cmp.Diff(want, p.Charts); diff != "" {
		t.Errorf("Charts (-want +got):\n%s", diff)
	}
	if tr := p.Set.Lookup("charts/cache/templates/x.yaml"); tr == nil || tr.Tree == nil {
		t.Error("the disabled subchart's template is not parsed")
	}
	if d := p.Set.Lookup("name"); d == nil || d.ParseName != "templates/_helpers.tpl" {
		t.Errorf("define name from %v, want the root's (templates/_helpers.tpl)", d)
	}
	if p.Sources["charts/cache/templates/x.yaml"] != "{{ .Values.size }}\n" || p.HelmNames["shop/charts/c/templates/x.yaml"] != "charts/cache/templates/x.yaml" {
		t.Errorf("Sources %v, HelmNames %v: want the subchart's text and its Helm name", p.Sources, p.HelmNames)
	}

	// A disabled subchart that does not parse fails Parse, at its file
	// and line, though a render leaves it out.
	files["charts/cache/templates/_h.tpl"] = &fstest.MapFile{Data: []byte("{{ if }}")}
	if b, err = templates.Load(files, templates.LoadOptions{Name: "shop"}); err != nil {
		t.Fatalf("load with a disabled subchart that does not parse: %v", err)
	}
	_, err = b.Parse()
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "charts/cache/templates/_h.tpl" || re.Line != 1 {
		t.Errorf("Parse: %v, want a RenderError at charts/cache/templates/_h.tpl:1", err)
	}
}
