package templates_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// The benchmark bundles: testdata/webapp (5 templates), testdata/podinfo
// (11 templates, the size and structure of the podinfo chart) and
// testdata/kube-state-metrics (25 templates with many helpers and RBAC
// rules generated from a list, the size of that chart). Each also loads
// as a Helm chart: hack/helmbench renders them with Helm's engine side by
// side.

// BenchmarkRender renders the realistic webapp bundle (Deployment, Service,
// ConfigMap, HPA, Ingress with helpers) from a loaded bundle: the
// controller's warm path.
func BenchmarkRender(b *testing.B) { benchmarkRender(b, "webapp") }

// BenchmarkRenderKustomize renders it through a kustomization with patches.
func BenchmarkRenderKustomize(b *testing.B) { benchmarkRender(b, "webapp-kustomize") }

// BenchmarkRenderPodinfo renders the podinfo-sized bundle, warm.
func BenchmarkRenderPodinfo(b *testing.B) { benchmarkRender(b, "podinfo") }

// BenchmarkRenderKubeStateMetrics renders the kube-state-metrics-sized
// bundle, warm.
func BenchmarkRenderKubeStateMetrics(b *testing.B) { benchmarkRender(b, "kube-state-metrics") }

// BenchmarkLoadRender loads each bundle from its folder and renders it:
// the cold path (`stencil render`, a new Bundle revision).
func BenchmarkLoadRender(b *testing.B) {
	for _, dir := range []string{"webapp", "podinfo", "kube-state-metrics"} {
		b.Run(dir, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bundle, err := templates.Load(os.DirFS(filepath.Join("testdata", dir)), templates.LoadOptions{Name: "test"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := templates.Render(bundle, templates.Input{Composition: web}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

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

// TestBenchmarkBundles checks that the benchmark bundles render what they
// are meant to measure: every object kind their charts emit by default.
func TestBenchmarkBundles(t *testing.T) {
	for _, tt := range []struct {
		dir  string
		want map[string]int
	}{
		{"podinfo", map[string]int{"Deployment": 2, "Service": 2, "ConfigMap": 1, "HorizontalPodAutoscaler": 1, "Ingress": 1,
			"ServiceAccount": 1, "Certificate": 1, "ServiceMonitor": 1, "ServiceProfile": 1}},
		{"kube-state-metrics", map[string]int{"Deployment": 1, "Service": 1, "ServiceAccount": 1, "ClusterRole": 2, "ClusterRoleBinding": 1,
			"ServiceMonitor": 1, "ScrapeConfig": 1, "NetworkPolicy": 1, "CiliumNetworkPolicy": 1, "PodDisruptionBudget": 1, "Secret": 1,
			"ConfigMap": 4, "VerticalPodAutoscaler": 1, "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, "PrometheusRule": 1}},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			objs, err := templates.Render(loadDir(t, tt.dir), templates.Input{Composition: web})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, o := range objs {
				got[o.GetKind()]++
			}
			for kind, n := range tt.want {
				if got[kind] != n {
					t.Errorf("%d %s, want %d (all: %v)", got[kind], kind, n, got)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("kinds %v, want %v", got, tt.want)
			}
		})
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
