package nochange

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
)

// fakeOpenAPI serves an OpenAPI v3 index and group-version documents,
// counting the requests.
type fakeOpenAPI struct {
	docs           map[string]string // index path → document
	hash           map[string]string // index path → hash
	index, fetches int
}

func (f *fakeOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	f.index++
	out := map[string]openapi.GroupVersion{}
	for p := range f.docs {
		out[p] = fakeGV{f, p}
	}
	return out, nil
}

type fakeGV struct {
	f    *fakeOpenAPI
	path string
}

func (g fakeGV) Schema(string) ([]byte, error) {
	g.f.fetches++
	return []byte(g.f.docs[g.path]), nil
}

func (g fakeGV) ServerRelativeURL() string {
	return "/openapi/v3/" + g.path + "?hash=" + g.f.hash[g.path]
}

func gadgetDoc(kinds ...string) string {
	schemas := ""
	for i, k := range kinds {
		if i > 0 {
			schemas += ","
		}
		schemas += fmt.Sprintf(`"dev.stencil.diff.v1.%s": {"type": "object",
			"x-kubernetes-group-version-kind": [{"group": "diff.stencil.dev", "version": "v1", "kind": %q}],
			"properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
				"metadata": {"type": "object"}, "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}`, k, k)
	}
	return `{"openapi": "3.0.0", "info": {"title": "t", "version": "v1"}, "paths": {}, "components": {"schemas": {` + schemas + `}}}`
}

// TestSchemasCustomKinds: a custom kind's schema is fetched once per
// group-version and reused; a new hash in the index (a CRD of the group
// changed) fetches it again; a kind missing from it is looked for again
// at most once per schemaRetryAfter; stencil's own apply of a CRD of the
// group forgets it.
func TestSchemasCustomKinds(t *testing.T) {
	ctx := context.Background()
	f := &fakeOpenAPI{docs: map[string]string{"apis/diff.stencil.dev/v1": gadgetDoc("Gadget")}, hash: map[string]string{"apis/diff.stencil.dev/v1": "1"}}
	s, err := NewSchemas(f, "stencil")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	gadget := schema.GroupVersionKind{Group: "diff.stencil.dev", Version: "v1", Kind: "Gadget"}
	widget := gadget.GroupVersion().WithKind("Widget")

	for range 3 {
		if _, err := s.forKind(ctx, gadget); err != nil {
			t.Fatal(err)
		}
	}
	if f.fetches != 1 || f.index != 1 {
		t.Errorf("three lookups made %d index reads and %d fetches, want 1 and 1", f.index, f.fetches)
	}
	if _, err := s.forKind(ctx, widget); err == nil {
		t.Error("a kind the schema lacks was typed")
	}
	if f.fetches != 1 {
		t.Errorf("a missing kind fetched again at once (%d fetches)", f.fetches)
	}
	// The CRD is published: past schemaRetryAfter the kind is found.
	f.docs["apis/diff.stencil.dev/v1"] = gadgetDoc("Gadget", "Widget")
	now = now.Add(schemaRetryAfter)
	if _, err := s.forKind(ctx, widget); err != nil {
		t.Errorf("after schemaRetryAfter: %v", err)
	}
	if f.fetches != 2 {
		t.Errorf("%d fetches, want 2", f.fetches)
	}
	// A CRD of the group changes: its hash does; read past schemaIndexTTL.
	f.hash["apis/diff.stencil.dev/v1"] = "2"
	now = now.Add(schemaIndexTTL)
	if _, err := s.forKind(ctx, gadget); err != nil {
		t.Fatal(err)
	}
	if f.fetches != 3 {
		t.Errorf("a changed hash: %d fetches, want 3", f.fetches)
	}
	s.ForgetGroup("diff.stencil.dev")
	if _, err := s.forKind(ctx, gadget); err != nil {
		t.Fatal(err)
	}
	if f.fetches != 4 {
		t.Errorf("after stencil applied a CRD of the group: %d fetches, want 4", f.fetches)
	}
	// Built-in kinds never ask the cluster.
	if _, err := s.forKind(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); err != nil {
		t.Fatal(err)
	}
	if f.fetches != 4 {
		t.Errorf("a built-in kind fetched a schema")
	}
}
