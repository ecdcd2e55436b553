package templates_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

const kDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
      - name: app
        image: nginx
`

func TestKustomize(t *testing.T) {
	base := func(kustomization string, extra map[string]string) map[string]string {
		files := map[string]string{"values.yaml": "replicas: 2\n", "templates/deployment.yaml": kDeployment, "kustomization.yaml": kustomization}
		for k, v := range extra {
			files[k] = v
		}
		return files
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"strategic merge patch", base("resources: [templates/deployment.yaml]\npatches:\n- path: patch.yaml\n", map[string]string{
			"patch.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.28\n"}),
			[]string{"image: nginx:1.28", "replicas: 2"}},
		{"JSON 6902 patch", base("resources: [templates/deployment.yaml]\npatches:\n- target: {kind: Deployment, name: web}\n  patch: |-\n    - op: replace\n      path: /spec/replicas\n      value: 7\n", nil),
			[]string{"replicas: 7"}},
		{"labels and a generator from a bundle file", base("resources: [templates/deployment.yaml]\nlabels: [{pairs: {team: a}}]\nconfigMapGenerator:\n- name: cfg\n  files: [conf/app.ini]\n", map[string]string{"conf/app.ini": "x=1\n"}),
			[]string{"team: a", "name: cfg-", "app.ini: |"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := templates.Render(bundle(t, tt.files), templates.Input{Composition: web})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				o.DeepCopy() // panics on a non-JSON number type such as int
			}
			got := toYAML(t, objs)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output:\n%s\nwant it to contain %q", got, w)
				}
			}
		})
	}
}

func TestKustomizeRefusals(t *testing.T) {
	tests := []struct{ name, kustomization, want string }{
		{"remote base", "resources: [https://github.com/kubernetes-sigs/kustomize//examples/helloWorld]\n", "remote reference"},
		{"git base", "resources: [github.com/org/repo/base]\n", "remote reference"},
		{"outside the bundle", "resources: [../../etc]\n", "outside the bundle"},
		{"absolute path", "resources: [/etc/kubernetes]\n", "outside the bundle"},
		{"helm charts", "helmCharts:\n- name: minecraft\n  repo: https://charts.example.com\n", "Helm chart inflation"},
		{"generator plugin", "generators: [gen.yaml]\n", "generators (plugins)"},
		{"transformer plugin", "transformers: [t.yaml]\n", "transformers (plugins)"},
		{"validator plugin", "validators: [v.yaml]\n", "validators (plugins)"},
		{"generator file outside", "configMapGenerator:\n- name: x\n  files: [../secret]\n", "outside the bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bundle(t, map[string]string{"templates/d.yaml": kDeployment, "values.yaml": "replicas: 1\n", "kustomization.yaml": tt.kustomization})
			_, err := templates.Render(b, templates.Input{Composition: web})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "kustomization.yaml") {
				t.Errorf("err = %v, want it to name kustomization.yaml and contain %q", err, tt.want)
			}
		})
	}
}
