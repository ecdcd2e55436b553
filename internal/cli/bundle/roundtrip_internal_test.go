package bundle

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// lossy loses spec.ports on every round trip through v2.
type lossy struct{}

func (lossy) RoundTrip(_ map[string]any, via string) ([]string, error) {
	if via == "v2" {
		return []string{"spec.ports", "spec.ports.http"}, nil
	}
	return nil, nil
}

func (lossy) AnnotatedFields(_ map[string]any, to string) ([]string, error) {
	if to == "v2" {
		return []string{"spec.extra"}, nil
	}
	return nil, nil
}

// TestRoundTripReportsLostFields: each field a round trip loses is a
// problem naming the version pair, the case and the field path, once per
// version pair however many cases lose it; an unserved version is not
// converted to.
func TestRoundTripReportsLostFields(t *testing.T) {
	api := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Versions: []v1alpha1.APIVersion{
		{Name: "v1"}, {Name: "v2", Storage: true}, {Name: "v3", Served: ptr.To(false)},
	}}
	var got []string
	report := func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) }
	seen := map[string]bool{}
	n := 0
	for _, label := range []string{"examples/a.yaml AppService a", "examples/b.yaml AppService b"} {
		c := roundTripCase{label, map[string]any{"apiVersion": "app.example.com/v1", "kind": "AppService"}}
		n += roundTrip(lossy{}, api, c, seen, report)
	}
	want := []string{
		"v1 → v2 → v1: examples/a.yaml AppService a: loses spec.ports",
		"v1 → v2 → v1: examples/a.yaml AppService a: loses spec.ports.http",
		"warning: v1 → v2: examples/a.yaml AppService a: spec.extra is kept only in the annotation conversion.stencil.dev/v1: v2 never sees it",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if n != 2 {
		t.Errorf("%d problems counted, want 2", n)
	}
}
