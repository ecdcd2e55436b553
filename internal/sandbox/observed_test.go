package sandbox_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

// TestObservedCrossesTheProtocol: a worker's render reads Input.Observed
// as the in-process render does, and its reads and held-back objects
// come back in the response.
func TestObservedCrossesTheProtocol(t *testing.T) {
	b := load(t, "obs", map[string]string{
		"templates/a.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  ip: {{ observed "Service/web" "spec.clusterIP" | quote }}
  port: {{ observed "Service/web" "spec.port" | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
  annotations:
    stencil.dev/wait-for: Secret/s data.token
`,
	})
	in := input
	in.Observed = map[string]map[string]any{"Service/web": {"spec": map[string]any{"clusterIP": "10.1.2.3", "port": int64(1234567)}}}
	var want templates.Observations
	in.Observations = &want
	objs, err := templates.Render(b, in)
	if err != nil {
		t.Fatal(err)
	}
	var got templates.Observations
	in.Observations = &got
	wobjs, err := newPool(t, sandbox.Limits{}, 1).Render(context.Background(), b, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(wobjs) != len(objs) || len(wobjs) != 1 || wobjs[0].Object["data"].(map[string]any)["ip"] != "10.1.2.3" {
		t.Fatalf("worker's objects %v, want the in-process ones with the observed ip", wobjs)
	}
	if d := cmp.Diff(objs[0].Object, wobjs[0].Object); d != "" {
		t.Errorf("object (-in process +worker):\n%s", d)
	}
	if len(got.Reads) != 3 || len(got.Held) != 1 {
		t.Errorf("observations %+v, want two reads and one held object", got)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observations (-in process +worker):\n%s", diff)
	}
}
