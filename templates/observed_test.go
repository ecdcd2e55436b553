package templates_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/observed"
)

// observedBundle: a Service, and a ConfigMap that copies its clusterIP
// and waits for it.
var observedBundle = map[string]string{
	"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n",
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: endpoint
  annotations:
    stencil.dev/wait-for: Service/web spec.clusterIP
data:
  ip: {{ observed "Service/web" "spec.clusterIP" | quote }}
  port: {{ observed "Service/web" "spec.ports.0.port" | default 0 | quote }}
`,
	"templates/free.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: free
data:
  ip: {{ observed "Service/web" "spec.clusterIP" | default "none" | quote }}
`,
}

func loadObserved(t *testing.T) *templates.Bundle {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "obs"}, Spec: v1alpha1.BundleSpec{Files: observedBundle}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestObserved checks the function observed and the wait-for annotation:
// a value not observed reads as nil and holds back the object that waits
// for it; once observed it is read, and every read is recorded with the
// hash of what was read.
func TestObserved(t *testing.T) {
	b := loadObserved(t)
	in := templates.Input{Composition: templates.CompositionInfo{Name: "c", Namespace: "ns"}}

	t.Run("first pass: not observed, held back", func(t *testing.T) {
		var obs templates.Observations
		in := in
		in.Observations = &obs
		objs, err := templates.Render(b, in)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.GetKind()+"/"+o.GetName())
		}
		if diff := cmp.Diff([]string{"ConfigMap/free", "Service/web"}, names); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
		want := templates.Observations{
			Reads: []observed.ObservedRead{{ID: "Service/web", Path: []string{"spec", "clusterIP"}}, {ID: "Service/web", Path: []string{"spec", "ports", "0", "port"}}},
			Held:  []observed.HeldObject{{APIVersion: "v1", Kind: "ConfigMap", Name: "endpoint", ID: "ConfigMap/endpoint", WaitsFor: []string{"Service/web spec.clusterIP"}}},
		}
		if diff := cmp.Diff(want, obs); diff != "" {
			t.Errorf("observations (-want +got):\n%s", diff)
		}
		if got := objs[0].Object["data"].(map[string]any)["ip"]; got != "none" {
			t.Errorf("free's ip = %v, want none", got)
		}
	})
	t.Run("second pass: observed, applied", func(t *testing.T) {
		var obs templates.Observations
		in := in
		in.Observations = &obs
		in.Observed = map[string]map[string]any{"Service/web": {"spec": map[string]any{"clusterIP": "10.0.0.7", "ports": []any{map[string]any{"port": int64(80)}}}}}
		objs, err := templates.Render(b, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 3 || len(obs.Held) != 0 {
			t.Fatalf("%d objects, %d held; want 3 and none", len(objs), len(obs.Held))
		}
		for _, o := range objs {
			if o.GetName() == "endpoint" {
				if diff := cmp.Diff(map[string]any{"ip": "10.0.0.7", "port": "80"}, o.Object["data"]); diff != "" {
					t.Errorf("endpoint's data (-want +got):\n%s", diff)
				}
			}
		}
		if len(obs.Reads) != 2 || obs.Reads[0].Hash != observed.ValueHash("10.0.0.7") || obs.Reads[1].Hash != observed.ValueHash(int64(80)) {
			t.Errorf("reads %+v, want the hashes of what was read", obs.Reads)
		}
	})
	t.Run("a template changing a value read changes nothing observed", func(t *testing.T) {
		b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "obs2"}, Spec: v1alpha1.BundleSpec{Files: map[string]string{
			"templates/a.yaml": `{{ $s := observed "Service/web" "spec" }}{{ $_ := set $s "clusterIP" "evil" }}apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  ip: {{ observed "Service/web" "spec.clusterIP" | quote }}
`}}})
		if err != nil {
			t.Fatal(err)
		}
		in := in
		in.Observed = map[string]map[string]any{"Service/web": {"spec": map[string]any{"clusterIP": "10.0.0.7"}}}
		objs, err := templates.Render(b, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := objs[0].Object["data"].(map[string]any)["ip"]; got != "10.0.0.7" {
			t.Errorf("ip = %v, want the observed 10.0.0.7", got)
		}
	})
	t.Run("bad uses are render errors", func(t *testing.T) {
		for name, file := range map[string]string{
			"no path":  `{{ observed "Service/web" }}`,
			"empty id": `{{ observed "" "spec" }}`,
			"bad wait": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    stencil.dev/wait-for: Service/web\n",
		} {
			b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.BundleSpec{Files: map[string]string{"templates/x.yaml": file}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = templates.Render(b, in)
			var re *templates.RenderError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "observed") && !strings.Contains(err.Error(), "wait-for") {
				t.Errorf("%s: error %v, want a RenderError about observed or wait-for", name, err)
			}
		}
	})
}
