package versions

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// instance is an instance at generation gen whose status is observed at
// observed, with a Ready condition (of condGen) of status st, on rev.
func instance(gen, observed, condGen int64, st, rev string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"observedGeneration": observed, "bundleRevision": rev,
		"conditions": []any{map[string]any{"type": "Ready", "status": st, "observedGeneration": condGen, "reason": "Ready",
			"message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}},
	}}}
	u.SetGeneration(gen)
	return u
}

func TestReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want bool
	}{
		{"Ready for its generation", instance(2, 2, 2, "True", "r"), true},
		{"Ready for the generation before", instance(2, 1, 1, "True", "r"), false},
		{"the condition behind the status", instance(2, 2, 1, "True", "r"), false},
		{"not Ready", instance(2, 2, 2, "False", "r"), false},
		{"no status", &unstructured.Unstructured{Object: map[string]any{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, ok := ready(tc.u)
			if ok != tc.want {
				t.Errorf("ready = %t, want %t", ok, tc.want)
			}
			if want := map[bool]string{true: "r"}[tc.want]; tc.want && rev != want {
				t.Errorf("revision = %q, want %q", rev, want)
			}
		})
	}
	items := []unstructured.Unstructured{*instance(1, 1, 1, "True", "a"), *instance(1, 1, 1, "True", "b"), *instance(1, 1, 1, "False", "a")}
	if got := readyOn(items, "a"); got != 1 {
		t.Errorf("readyOn(a) = %d, want 1", got)
	}
}

func TestMoved(t *testing.T) {
	before := stamps{"a": "1", "b": "2", "c": "3"}
	after := stamps{"a": "1", "b": "5", "d": "4"}
	if diff := cmp.Diff([]string{"b", "c", "d"}, moved(before, after)); diff != "" {
		t.Errorf("moved (-want +got):\n%s", diff)
	}
	if got := moved(before, before); len(got) != 0 {
		t.Errorf("moved of the same stamps = %v", got)
	}
	if got := count(nil); got != "0" {
		t.Errorf("count(nil) = %q", got)
	}
	if got := count([]string{"a", "b", "c", "d"}); got != "4 (a, b, c)" {
		t.Errorf("count of four = %q, want the first three named", got)
	}
}

// TestRequestsSplit: the writes to the children's resources are counted
// apart from their reads and from other resources; the migration's own
// requests are the instances' lists and updates (not their gets or
// status: the passes'), the CRD's and the Bundle's status.
func TestRequestsSplit(t *testing.T) {
	c := requests.Counts{
		"patch configmaps": 2, "create services": 1, "get configmaps": 5, "list services": 1, "patch secrets": 7,
		"update appservices.app.example.com": 100, "list appservices.app.example.com": 2, "patch appservices.app.example.com/status": 100,
		"get appservices.app.example.com": 100, "watch appservices.app.example.com": 1, "patch customresourcedefinitions.apiextensions.k8s.io": 2,
		"update customresourcedefinitions.apiextensions.k8s.io/status": 1, "patch bundles.stencil.dev/status": 3, "create events": 4,
	}
	if got := childWrites(c); got != 3 {
		t.Errorf("childWrites = %d, want 3", got)
	}
	want := requests.Counts{"update appservices.app.example.com": 100, "list appservices.app.example.com": 2,
		"update customresourcedefinitions.apiextensions.k8s.io/status": 1, "patch bundles.stencil.dev/status": 3}
	if diff := cmp.Diff(want, migrationOwn(c)); diff != "" {
		t.Errorf("migrationOwn (-want +got):\n%s", diff)
	}
}

// TestNotAsWritten: an instance read back as its v1 YAML wrote it passes;
// one whose spec differs, or that shows a conversion annotation, is
// named.
func TestNotAsWritten(t *testing.T) {
	var items []unstructured.Unstructured
	for i := range 3 {
		items = append(items, unstructured.Unstructured{Object: v1Instance(i, 2)})
	}
	if got := notAsWritten(items, 3, 2); len(got) != 0 {
		t.Errorf("as written, named %v", got)
	}
	items[1].Object["spec"].(map[string]any)["size"] = int64(9)
	items[2].SetAnnotations(map[string]string{"conversion.stencil.dev/v2": "{}"})
	want := []string{namespace(1) + "/" + instanceName(1), namespace(0) + "/" + instanceName(2)}
	slices.Sort(want)
	if diff := cmp.Diff(want, notAsWritten(items, 3, 2)); diff != "" {
		t.Errorf("notAsWritten (-want +got):\n%s", diff)
	}
}

func TestWantChildren(t *testing.T) {
	// Instances 0 to 9: every one a ConfigMap, all but 4 and 9 a Service.
	if got := wantChildren(10); got != 18 {
		t.Errorf("wantChildren(10) = %d, want 18", got)
	}
}
