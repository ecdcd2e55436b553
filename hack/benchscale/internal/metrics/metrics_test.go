package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

func TestParse(t *testing.T) {
	text := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="composition",result="success"} 42
controller_runtime_reconcile_total{controller="composition",result="error"} 3
controller_runtime_reconcile_total{controller="bundle",result="success"} 2
stencil_compositions{ready="True",reason="Ready"} 40
stencil_compositions{reason="Other, \"quoted\"",ready="False"} 1
workqueue_depth{controller="composition",name="composition"} 0
stencil_api_requests_total{resource="compositions.stencil.dev",verb="get"} 7
process_resident_memory_bytes 9.5e+07
`
	m, err := parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"controller_runtime_reconcile_total", map[string]string{"controller": "composition"}, 45},
		{"stencil_compositions", map[string]string{"ready": "True"}, 40},
		{"stencil_compositions", map[string]string{"reason": `Other, "quoted"`}, 1},
		{"workqueue_depth", map[string]string{"name": "composition"}, 0},
		{"process_resident_memory_bytes", nil, 9.5e7},
		{"absent", nil, 0},
	} {
		if got := m.Sum(tc.name, tc.match); got != tc.want {
			t.Errorf("Sum(%s, %v) = %v, want %v", tc.name, tc.match, got, tc.want)
		}
	}
	if diff := cmp.Diff(requests.Counts{"get compositions.stencil.dev": 7}, m.Requests()); diff != "" {
		t.Errorf("Requests (-want +got):\n%s", diff)
	}
	if _, err := parse(strings.NewReader(`broken{a="b 1` + "\n")); err == nil {
		t.Error("a label value without its closing quote parsed")
	}
}

func TestCountsSince(t *testing.T) {
	before, err := parse(strings.NewReader(`stencil_reconcile_passes_total{outcome="full"} 3
stencil_reconcile_passes_total{outcome="unchanged"} 7
stencil_applies_total{result="Created"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parse(strings.NewReader(`stencil_reconcile_passes_total{outcome="full"} 7
stencil_reconcile_passes_total{outcome="unchanged"} 7
stencil_reconcile_passes_total{outcome="error"} 2
stencil_applies_total{result="Created"} 9
`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"error": 2, "full": 4}, after.CountsSince(before, "stencil_reconcile_passes_total", "outcome")); diff != "" {
		t.Errorf("passes (-want +got):\n%s", diff)
	}
	if got := after.CountsSince(after, "stencil_applies_total", "result"); len(got) != 0 {
		t.Errorf("no growth: got %v, want none", got)
	}
}
