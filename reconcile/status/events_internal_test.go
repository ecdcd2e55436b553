package status

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
)

func TestChangeNote(t *testing.T) {
	for _, c := range []struct {
		name  string
		items []changed
		want  string
	}{
		{"one created", []changed{{ref: "ConfigMap/ns/a", action: "created"}}, "created 1: ConfigMap/ns/a created"},
		{"counts in order of first appearance, fields of a configured member", []changed{
			{ref: "ConfigMap/ns/a", action: "created"},
			{ref: "Deployment/ns/web", action: "configured", fields: []string{"spec.replicas", "spec.template"}},
			{ref: "Secret/ns/b", action: "created"},
		}, "created 2, configured 1: ConfigMap/ns/a created, Deployment/ns/web configured (spec.replicas, spec.template), Secret/ns/b created"},
		{"pruned", []changed{{ref: "ConfigMap/ns/x1", action: "pruned"}, {ref: "ConfigMap/ns/x2", action: "pruned"}},
			"pruned 2: ConfigMap/ns/x1 pruned, ConfigMap/ns/x2 pruned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := changeNote(c.items); got != c.want {
				t.Errorf("changeNote = %q, want %q", got, c.want)
			}
		})
	}
}

// TestChangeNoteBounded: a pass of many members names as many as fit in
// the API server's 1 kB note limit and counts the rest.
func TestChangeNoteBounded(t *testing.T) {
	var items []changed
	for i := range 200 {
		items = append(items, changed{ref: fmt.Sprintf("ConfigMap/a-long-namespace-name/member-%03d", i), action: "created"})
	}
	got := changeNote(items)
	if len(got) > noteLimit {
		t.Errorf("note of %d bytes, want at most %d", len(got), noteLimit)
	}
	if !utf8.ValidString(got) {
		t.Errorf("note is not valid UTF-8: %q", got)
	}
	if !strings.HasPrefix(got, "created 200: ConfigMap/a-long-namespace-name/member-000 created, ") {
		t.Errorf("note does not start with the count and the first member: %q", got)
	}
	named := strings.Count(got, " created") // the count, "created 200", opens the note: no space before it
	want := fmt.Sprintf(", … (+%d more)", 200-named)
	if !strings.HasSuffix(got, want) {
		t.Errorf("note names %d members and ends %q, want it to end %q", named, got[max(0, len(got)-40):], want)
	}

	// One member whose changed fields alone overflow is counted, not cut.
	long := []changed{{ref: "ConfigMap/ns/a", action: "configured", fields: []string{strings.Repeat("x", 2*noteLimit)}}}
	if got := changeNote(long); got != "configured 1: … (+1 more)" {
		t.Errorf("changeNote of an overlong member = %q", got)
	}
}

// TestPassEventsRelated: a summary's related object is its first member, at
// the resourceVersion the pass's write gave it, so summaries of two passes
// never fold into one series.
func TestPassEventsRelated(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
		u.SetNamespace("ns")
		u.SetName(name)
		return u
	}
	live := obj("a")
	live.SetResourceVersion("42")
	var e Events
	e.Apply(applyset.ApplyResult{Object: obj("a"), UID: types.UID("uid-a"), Action: applyset.Created, Live: live})
	e.Apply(applyset.ApplyResult{Object: obj("b"), UID: types.UID("uid-b"), Action: applyset.Configured, Changed: []string{"data.v"}})
	r := e.firstApplied
	if r == nil || r.Name != "a" || r.UID != "uid-a" || r.ResourceVersion != "42" || r.Kind != "ConfigMap" {
		t.Fatalf("related = %+v, want ConfigMap a, uid-a, resourceVersion 42", r)
	}
	if got, want := changeNote(e.applied), "created 1, configured 1: ConfigMap/ns/a created, ConfigMap/ns/b configured (data.v)"; got != want {
		t.Errorf("note = %q, want %q", got, want)
	}
}

// TestFirstPassCreatesRecordNoEvent: a parent's first pass that only
// created members records no Applied event (its status says it); one that
// also configured an object records it, as any later pass does.
func TestFirstPassCreatesRecordNoEvent(t *testing.T) {
	obj := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
		u.SetNamespace("ns")
		u.SetName(name)
		return u
	}
	parent := &unstructured.Unstructured{}
	for _, tc := range []struct {
		name       string
		firstPass  bool
		configured bool
		want       int
	}{
		{"first pass, created only", true, false, 0},
		{"first pass, an object configured", true, true, 1},
		{"later pass, created only", false, false, 1},
	} {
		rec := events.NewFakeRecorder(4)
		e := Events{FirstPass: tc.firstPass}
		e.Apply(applyset.ApplyResult{Object: obj("a"), UID: "uid-a", Action: applyset.Created})
		if tc.configured {
			e.Apply(applyset.ApplyResult{Object: obj("b"), UID: "uid-b", Action: applyset.Configured, Changed: []string{"data.v"}})
		}
		e.RecordApplied(rec, parent)
		if got := len(rec.Events); got != tc.want {
			t.Errorf("%s: %d events, want %d", tc.name, got, tc.want)
		}
	}
}
