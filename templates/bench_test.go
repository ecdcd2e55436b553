package templates_test

import (
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// BenchmarkRender renders the realistic webapp bundle (Deployment, Service,
// ConfigMap, HPA, Ingress with helpers).
func BenchmarkRender(b *testing.B) { benchmarkRender(b, "webapp") }

// BenchmarkRenderKustomize renders it through a kustomization with patches.
func BenchmarkRenderKustomize(b *testing.B) { benchmarkRender(b, "webapp-kustomize") }

func benchmarkRender(b *testing.B, dir string) {
	bundle := loadDir(b, dir)
	in := templates.Input{Composition: web}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := templates.Render(bundle, in); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRender renders arbitrary template text with arbitrary values: it may
// fail, but must never panic or run unbounded.
func FuzzRender(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n", `{"name":"x"}`)
	f.Add(`{{ range until 5 }}{{ . }}{{ end }}`, `{}`)
	f.Add(`{{ include "h" . }}`, `{"a":[1,2,{"b":null}]}`)
	f.Add(`{{ tpl .Values.t . }}`, `{"t":"{{ tpl .Values.t . }}"}`)
	f.Add("---\n---\n{{ toYaml .Values }}", `{"kind":"x","apiVersion":"v1","metadata":{"name":"n"}}`)
	f.Fuzz(func(t *testing.T, text, vals string) {
		files := map[string]string{"templates/t.yaml": text, "templates/_h.tpl": `{{ define "h" }}{{ include "h" . }}{{ end }}`}
		b := bundleOrNil(files)
		if b == nil {
			return
		}
		_, _ = templates.Render(b, templates.Input{Values: values(vals), Composition: web})
	})
}
