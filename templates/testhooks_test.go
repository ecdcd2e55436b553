package templates_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// testHookChart is podinfo's layout: a Service, and test pods under
// templates/tests whose names call now (through a helper and tpl too):
// the generators (randAlphaNum, ...) are kept, now cannot be.
func testHookChart(extra map[string]string) map[string]string {
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"templates/_helpers.tpl": `{{- define "demo.suffix" -}}{{ now | date "0405" }}{{- end -}}`,
		"templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
		"templates/tests/jwt.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-jwt-test-{{ now | date "0405" }}
  annotations:
    "helm.sh/hook": test-success
spec:
  containers: [{name: t, image: curl}]
---
apiVersion: v1
kind: Pod
metadata:
  name: t-{{ include "demo.suffix" . }}-{{ tpl "{{ now | date \"05\" }}" . }}
  annotations:
    helm.sh/hook: " test , test-failure"
`,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

// TestTestHooksMayBeNondeterministic: a template writing only test hooks
// may call nondeterministic functions, and its objects are dropped; any
// other template calling one is refused at the call's file and line.
func TestTestHooksMayBeNondeterministic(t *testing.T) {
	tests := []struct {
		name    string
		extra   map[string]string
		wantErr string // "" renders
	}{
		{name: "test hooks only"},
		{name: "a template that is not a hook", extra: map[string]string{
			"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  p: {{ now | date \"2006\" }}\n",
		}, wantErr: `templates/secret.yaml:6: function "now" gives a different result`},
		{name: "a test hook beside an object that is not", extra: map[string]string{
			"templates/tests/mixed.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations: {helm.sh/hook: test}\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-{{ now | date \"05\" }}\n",
		}, wantErr: `templates/tests/mixed.yaml:10: function "now"`},
		{name: "another hook", extra: map[string]string{
			"templates/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j-{{ now | date \"05\" }}\n  annotations: {helm.sh/hook: pre-install}\n",
		}, wantErr: `templates/job.yaml:4: function "now"`},
		{name: "test and install hook", extra: map[string]string{
			"templates/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j-{{ now | date \"05\" }}\n  annotations: {helm.sh/hook: \"test,post-install\"}\n",
		}, wantErr: `templates/job.yaml:4: function "now"`},
		{name: "through a helper, in a template that is not a hook", extra: map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c-{{ include \"demo.suffix\" . }}\n",
		}, wantErr: `templates/cm.yaml:4: template: templates/_helpers.tpl:1:31: error calling now: function "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: testHookChart(tt.extra)}})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the bound set is reused: the second render sees the same functions
				objs, err := templates.Render(b, templates.Input{Composition: web})
				if tt.wantErr != "" {
					var re *templates.RenderError
					if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err = %v, want a RenderError containing %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(objs) != 1 || objs[0].GetKind() != "Service" {
					t.Fatalf("rendered %d objects (%v), want the Service only", len(objs), objs)
				}
			}
		})
	}
}

// TestTestHooksConcurrent: the second run of a test hook binds the
// nondeterministic functions on its render's set only, so renders of the
// bundle at the same time keep refusing them (run with -race).
func TestTestHooksConcurrent(t *testing.T) {
	hooks, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: testHookChart(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	refused, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: testHookChart(map[string]string{
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  p: {{ now | date \"2006\" }}\n",
	})}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				if objs, err := templates.Render(hooks, templates.Input{Composition: web}); err != nil || len(objs) != 1 {
					t.Errorf("test hooks: %d objects, %v; want the Service", len(objs), err)
				}
				if _, err := templates.Render(refused, templates.Input{Composition: web}); err == nil {
					t.Error("a Secret calling now rendered")
				}
			}
		})
	}
	wg.Wait()
}
