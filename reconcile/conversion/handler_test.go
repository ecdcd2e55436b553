package conversion_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/conversion"
)

// renamer converts AppService between v1 (size) and v2 (replicas), and
// fails on a negative size, naming the rule as the engine does.
type renamer struct{}

func (renamer) Convert(obj map[string]any, to string) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	spec, _ := obj["spec"].(map[string]any)
	next := map[string]any{}
	from, into := "size", "replicas"
	if to == "v1" {
		from, into = into, from
	}
	for k, v := range spec {
		if k == from {
			if n, ok := v.(int64); ok && n < 0 {
				return nil, errors.New("version v1: spec.size: rule 0 (move): negative")
			}
			k = into
		}
		next[k] = v
	}
	out["spec"] = next
	out["apiVersion"] = "app.example.com/" + to
	// Metadata a converter must not change: the handler keeps it.
	out["metadata"] = map[string]any{"name": "changed", "annotations": map[string]any{"conversion.stencil.dev/v1": "{}"}}
	return out, nil
}

func bundle(generation int64) *v1alpha1.Bundle {
	return &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "appservice", Generation: generation},
		Spec: v1alpha1.BundleSpec{API: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService",
			Versions: []v1alpha1.APIVersion{{Name: "v1"}, {Name: "v2", Storage: true}}}}}
}

// tokens are a Tokens of a map.
type tokens map[string]schema.GroupKind

func (t tokens) Kind(_ context.Context, token string) (schema.GroupKind, bool) {
	gk, ok := t[token]
	return gk, ok
}

// The tokens of the fixture: AppService's, and Thing's (a kind no Bundle
// publishes).
var (
	appToken   = strings.Repeat("a1", publish.ConversionTokenBytes)
	thingToken = strings.Repeat("b2", publish.ConversionTokenBytes)
)

type fixture struct {
	h      *conversion.Handler
	builds int
	// path is where reviews are sent: AppService's conversion path.
	path string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(bundle(1)).Build()
	f := &fixture{path: publish.ConversionPath(appToken)}
	known := tokens{appToken: {Group: "app.example.com", Kind: "AppService"}, thingToken: {Group: "app.example.com", Kind: "Thing"}}
	f.h = conversion.New(c, c, known, func(name string, _ v1alpha1.BundleSpec) (conversion.Converter, error) {
		f.builds++
		return renamer{}, nil
	})
	return f
}

func (f *fixture) review(t *testing.T, desired string, objects ...string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	rec := f.post(t, f.path, desired, objects...)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil || out.Response == nil {
		t.Fatalf("response %s: %v", rec.Body, err)
	}
	if out.Response.UID != "review-1" || out.Kind != "ConversionReview" {
		t.Errorf("uid %s, kind %s", out.Response.UID, out.Kind)
	}
	return out.Response
}

// post sends a review of objects to path.
func (f *fixture) post(t *testing.T, path, desired string, objects ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := &apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: desired}}
	for _, o := range objects {
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	return rec
}

const v1Object = `{"apiVersion":"app.example.com/v1","kind":"AppService","metadata":{"name":"web","namespace":"team-a","uid":"u1","labels":{"a":"b"}},"spec":{"size":3}}`

func TestConvert(t *testing.T) {
	f := newFixture(t)
	res := f.review(t, "app.example.com/v2", v1Object, `{"apiVersion":"app.example.com/v2","kind":"AppService","metadata":{"name":"db","namespace":"team-a"},"spec":{"replicas":1}}`)
	if res.Result.Status != metav1.StatusSuccess || len(res.ConvertedObjects) != 2 {
		t.Fatalf("result %+v, %d objects", res.Result, len(res.ConvertedObjects))
	}
	var got map[string]any
	if err := json.Unmarshal(res.ConvertedObjects[0].Raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "app.example.com/v2", "kind": "AppService",
		"metadata": map[string]any{"name": "web", "namespace": "team-a", "uid": "u1", "labels": map[string]any{"a": "b"},
			"annotations": map[string]any{"conversion.stencil.dev/v1": "{}"}},
		"spec": map[string]any{"replicas": float64(3)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("converted (-want +got):\n%s", diff)
	}
	if string(res.ConvertedObjects[1].Raw) != `{"apiVersion":"app.example.com/v2","kind":"AppService","metadata":{"name":"db","namespace":"team-a"},"spec":{"replicas":1}}` {
		t.Errorf("an object already in v2 changed: %s", res.ConvertedObjects[1].Raw)
	}
	f.review(t, "app.example.com/v2", v1Object)
	if f.builds != 1 {
		t.Errorf("%d converters built for one Bundle generation, want 1", f.builds)
	}
}

func TestConvertFailure(t *testing.T) {
	f := newFixture(t)
	res := f.review(t, "app.example.com/v2", v1Object, `{"apiVersion":"app.example.com/v1","kind":"AppService","metadata":{"name":"bad","namespace":"team-a"},"spec":{"size":-1}}`)
	if res.Result.Status != metav1.StatusFailure || len(res.ConvertedObjects) != 0 {
		t.Fatalf("result %+v, %d objects; want a Failure with none", res.Result, len(res.ConvertedObjects))
	}
	for _, part := range []string{"AppService team-a/bad", "from v1 to v2", "spec.size", "rule 0"} {
		if !strings.Contains(res.Result.Message, part) {
			t.Errorf("message %q does not name %q", res.Result.Message, part)
		}
	}
	f.path = publish.ConversionPath(thingToken)
	res = f.review(t, "app.example.com/v2", `{"apiVersion":"app.example.com/v1","kind":"Thing","metadata":{"name":"x"}}`)
	if res.Result.Status != metav1.StatusFailure || !strings.Contains(res.Result.Message, "no Bundle publishes Thing.app.example.com") {
		t.Errorf("a kind no Bundle publishes: %+v", res.Result)
	}
}

// Only a path holding a known token is answered, and only for its own
// kind: any other path is a 404 with nothing built or converted, and a
// token of one kind converts no other.
func TestConvertNeedsTheKindsToken(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{"/convert", "/convert/", publish.ConversionPath(strings.Repeat("c3", publish.ConversionTokenBytes)), "/convert/" + appToken[:10]} {
		rec := f.post(t, path, "app.example.com/v2", v1Object)
		if rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "ConversionReview") {
			t.Errorf("POST %s: status %d, %s; want a 404", path, rec.Code, rec.Body)
		}
	}
	if f.builds != 0 {
		t.Errorf("%d converters built for requests with no known token", f.builds)
	}
	f.path = publish.ConversionPath(thingToken)
	res := f.review(t, "app.example.com/v2", v1Object)
	if res.Result.Status != metav1.StatusFailure || len(res.ConvertedObjects) != 0 ||
		!strings.Contains(res.Result.Message, "AppService team-a/web") || !strings.Contains(res.Result.Message, "Thing.app.example.com") {
		t.Errorf("an AppService through Thing's token: %+v", res.Result)
	}
	if f.builds != 0 {
		t.Errorf("%d converters built for a review of another kind", f.builds)
	}
}
