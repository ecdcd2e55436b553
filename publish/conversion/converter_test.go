package conversion

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// The AppService kind of the issue: v1 has size and a list of ports,
// v2 (storage) has replicas and a map of ports.
func appServiceAPI() v1alpha1.BundleAPI {
	return v1alpha1.BundleAPI{
		Group: "app.example.com",
		Kind:  "AppService",
		Versions: []v1alpha1.APIVersion{
			{Name: "v1", Conversion: &v1alpha1.VersionConversion{
				ToStorage: rules(
					move("size", "replicas"),
					setRule("ports", "has(self.ports) ? self.ports.transformMapEntry(i, p, {p.name: p.port}) : null"),
				),
				FromStorage: rules(
					move("replicas", "size"),
					setRule("ports", "has(self.ports) ? self.ports.map(k, {'name': k, 'port': self.ports[k]}) : null"),
				),
			}},
			{Name: "v2", Storage: true},
		},
	}
}

func appServiceSchemas(t testing.TB) map[string]*apiextensionsv1.JSONSchemaProps {
	return map[string]*apiextensionsv1.JSONSchemaProps{
		"v1": schema(t, `{"type":"object","properties":{
			"size":{"type":"integer","minimum":1,"maximum":10},
			"image":{"type":"string"},
			"ports":{"type":"array","items":{"type":"object","properties":{
				"name":{"type":"string"},"port":{"type":"integer","minimum":1,"maximum":65535},
				"protocol":{"type":"string","enum":["TCP","UDP"]}}}},
			"legacy":{"type":"string"}}}`),
		"v2": schema(t, `{"type":"object","properties":{
			"replicas":{"type":"integer"},
			"image":{"type":"string"},
			"ports":{"type":"object","additionalProperties":{"type":"integer"}},
			"paused":{"type":"boolean"}}}`),
	}
}

func schema(t testing.TB, s string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	var out apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("schema: %v", err)
	}
	return &out
}

func newAppService(t testing.TB) *Converter {
	t.Helper()
	c, err := New(appServiceAPI(), appServiceSchemas(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func object(t testing.TB, version, spec string) map[string]any {
	t.Helper()
	return doc(t, `{"apiVersion":"app.example.com/`+version+`","kind":"AppService",
		"metadata":{"name":"web","namespace":"team-a","labels":{"app":"web"},"annotations":{"note":"keep"}},
		"spec":`+spec+`,"status":{"observedGeneration":3,"conditions":[{"type":"Ready","status":"True"}]}}`)
}

func TestConvert(t *testing.T) {
	c := newAppService(t)
	v1 := object(t, "v1", `{"size":3,"image":"nginx:1.25","ports":[{"name":"https","port":443},{"name":"http","port":80}]}`)
	before := object(t, "v1", `{"size":3,"image":"nginx:1.25","ports":[{"name":"https","port":443},{"name":"http","port":80}]}`)
	v2, err := c.Convert(v1, "v2")
	if err != nil {
		t.Fatalf("Convert to v2: %v", err)
	}
	if d := cmp.Diff(before, v1); d != "" {
		t.Errorf("Convert changed its input (-before +after):\n%s", d)
	}
	if got := v2["apiVersion"]; got != "app.example.com/v2" {
		t.Errorf("apiVersion = %v, want app.example.com/v2", got)
	}
	if d := cmp.Diff(doc(t, `{"replicas":3,"image":"nginx:1.25","ports":{"http":80,"https":443}}`), v2["spec"]); d != "" {
		t.Errorf("v2 spec (-want +got):\n%s", d)
	}
	if d := cmp.Diff(v1["status"], v2["status"]); d != "" {
		t.Errorf("status changed (-v1 +v2):\n%s", d)
	}
	md := v2["metadata"].(map[string]any)
	if md["name"] != "web" || md["labels"].(map[string]any)["app"] != "web" || annotations(v2)["note"] != "keep" {
		t.Errorf("metadata changed: %v", md)
	}
	// The port list's order is what v2 cannot hold.
	if _, ok := annotations(v2)[AnnotationPrefix+"v1"]; !ok {
		t.Errorf("no annotation %sv1 keeping the order of the ports: %v", AnnotationPrefix, annotations(v2))
	}
	back, err := c.Convert(v2, "v1")
	if err != nil {
		t.Fatalf("Convert back to v1: %v", err)
	}
	if d := cmp.Diff(before, back); d != "" {
		t.Errorf("v1 → v2 → v1 (-want +got):\n%s", d)
	}
}

func TestConvertLossless(t *testing.T) {
	c := newAppService(t)
	tests := []struct {
		name    string
		version string
		spec    string
		via     string
	}{
		{"a field only v1 has", "v1", `{"size":2,"legacy":"x","image":"a"}`, "v2"},
		{"a field of a list item only v1 has", "v1", `{"ports":[{"name":"dns","port":53,"protocol":"UDP"}]}`, "v2"},
		{"a field only v2 has", "v2", `{"replicas":2,"paused":true}`, "v1"},
		{"v2 ports in v1 and back", "v2", `{"ports":{"b":2,"a":1}}`, "v1"},
		{"an empty spec", "v1", `{}`, "v2"},
		{"an unknown field", "v2", `{"replicas":1,"unknown":{"deep":1}}`, "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object(t, tt.version, tt.spec)
			mid, err := c.Convert(obj, tt.via)
			if err != nil {
				t.Fatalf("Convert to %s: %v", tt.via, err)
			}
			back, err := c.Convert(mid, tt.version)
			if err != nil {
				t.Fatalf("Convert back: %v", err)
			}
			want := object(t, tt.version, tt.spec)
			if tt.name == "an unknown field" {
				// The API server prunes what the version's schema does
				// not hold: so does the conversion.
				delete(want["spec"].(map[string]any), "unknown")
			}
			if d := cmp.Diff(want, back); d != "" {
				t.Errorf("round trip (-want +got):\n%s", d)
			}
			for k := range annotations(back) {
				if strings.HasPrefix(k, AnnotationPrefix) {
					t.Errorf("stale annotation %s after the round trip", k)
				}
			}
		})
	}
}

func TestConvertKeepsEditsMadeInTheOtherVersion(t *testing.T) {
	c := newAppService(t)
	v1 := object(t, "v1", `{"size":2,"legacy":"x","ports":[{"name":"b","port":2},{"name":"a","port":1}]}`)
	v2, err := c.Convert(v1, "v2")
	if err != nil {
		t.Fatal(err)
	}
	spec := v2["spec"].(map[string]any)
	spec["replicas"] = int64(5)
	spec["ports"].(map[string]any)["c"] = int64(3)
	back, err := c.Convert(v2, "v1")
	if err != nil {
		t.Fatal(err)
	}
	// legacy is restored; the edited ports win over the recorded order.
	want := doc(t, `{"size":5,"legacy":"x","ports":[{"name":"a","port":1},{"name":"b","port":2},{"name":"c","port":3}]}`)
	if d := cmp.Diff(want, back["spec"]); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
}

// threeVersions: v1 {name, size, color}; v2 (storage) {name, replicas};
// v3 {title, replicas, zone}.
func threeVersions(t testing.TB) *Converter {
	api := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Versions: []v1alpha1.APIVersion{
		{Name: "v1", Conversion: &v1alpha1.VersionConversion{ToStorage: rules(move("size", "replicas"))}},
		{Name: "v2", Storage: true},
		{Name: "v3", Conversion: &v1alpha1.VersionConversion{ToStorage: rules(move("title", "name"))}},
	}}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{
		"v1": schema(t, `{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"},"color":{"type":"string"}}}`),
		"v2": schema(t, `{"type":"object","properties":{"name":{"type":"string"},"replicas":{"type":"integer"}}}`),
		"v3": schema(t, `{"type":"object","properties":{"title":{"type":"string"},"replicas":{"type":"integer"},"zone":{"type":"string"}}}`),
	}
	c, err := New(api, schemas)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func TestConvertChains(t *testing.T) {
	c := threeVersions(t)
	tests := []struct {
		start, spec string
		chain       []string
	}{
		{"v1", `{"name":"a","size":2,"color":"red"}`, []string{"v2", "v3", "v1"}},
		{"v1", `{"name":"a","size":2,"color":"red"}`, []string{"v3", "v2", "v1"}},
		{"v3", `{"title":"a","replicas":2,"zone":"z1"}`, []string{"v1", "v2", "v3"}},
		{"v3", `{"title":"a","replicas":2,"zone":"z1"}`, []string{"v2", "v1", "v3"}},
		{"v1", `{"color":"red"}`, []string{"v3", "v1", "v2", "v3", "v2", "v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.start+"→"+strings.Join(tt.chain, "→"), func(t *testing.T) {
			obj := object(t, tt.start, tt.spec)
			cur := obj
			for _, v := range tt.chain {
				next, err := c.Convert(cur, v)
				if err != nil {
					t.Fatalf("Convert to %s: %v", v, err)
				}
				cur = next
			}
			if d := cmp.Diff(object(t, tt.start, tt.spec), cur); d != "" {
				t.Errorf("after the chain (-want +got):\n%s", d)
			}
		})
	}
}

func TestConvertSingleVersion(t *testing.T) {
	c, err := New(v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Version: "v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "v1", `{"x":1}`)
	got, err := c.Convert(obj, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(object(t, "v1", `{"x":1}`), got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := c.Convert(obj, "v2"); err == nil {
		t.Error("Convert to a version the kind lacks: no error")
	}
	if _, err := c.Convert(object(t, "v9", `{}`), "v1"); err == nil {
		t.Error("Convert from a version the kind lacks: no error")
	}
	d, err := New(v1alpha1.BundleAPI{Group: "g.example.com", Kind: "K"}, nil)
	if err != nil || d.StorageVersion() != DefaultVersion {
		t.Errorf("New with no version: %v, storage %q, want %s", err, d.StorageVersion(), DefaultVersion)
	}
}

func TestConvertErrors(t *testing.T) {
	api := appServiceAPI()
	api.Versions[0].Conversion.ToStorage = rules(setRule("replicas", "self.size + 1"))
	c, err := New(api, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Convert(object(t, "v1", `{"image":"x"}`), "v2")
	for _, w := range []string{"convert v1 to v2", "spec.api.versions[0].conversion.toStorage[0]", "(set replicas)", `"self.size + 1"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not contain %q", err, w)
		}
	}
	var re *Error
	if !errorsAs(err, &re) || re.Index != 0 || re.Op != OpSet {
		t.Errorf("error %v is not an *Error of rule 0's set", err)
	}
}

func TestAnnotationBound(t *testing.T) {
	c := newAppService(t)
	obj := object(t, "v1", `{"legacy":"`+strings.Repeat("x", MaxAnnotationBytes)+`"}`)
	if _, err := c.Convert(obj, "v2"); err == nil || !strings.Contains(err.Error(), "annotation") {
		t.Errorf("Convert of a spec v2 cannot hold that exceeds the annotation bound: %v", err)
	}
}

func TestNewInvalid(t *testing.T) {
	tests := []struct {
		name string
		api  v1alpha1.BundleAPI
		want []string
	}{
		{"two storage versions", v1alpha1.BundleAPI{Versions: []v1alpha1.APIVersion{{Name: "v1", Storage: true}, {Name: "v2", Storage: true}}},
			[]string{"spec.api.versions"}},
		{"version and versions", v1alpha1.BundleAPI{Version: "v1", Versions: []v1alpha1.APIVersion{{Name: "v1", Storage: true}}},
			[]string{"spec.api.version"}},
		{"a set with no fromStorage", v1alpha1.BundleAPI{Versions: []v1alpha1.APIVersion{{Name: "v1", Conversion: &v1alpha1.VersionConversion{
			ToStorage: rules(setRule("a", "1"))}}, {Name: "v2", Storage: true}}},
			[]string{"spec.api.versions[0].conversion.fromStorage"}},
		{"a bad expression", v1alpha1.BundleAPI{Versions: []v1alpha1.APIVersion{{Name: "v1", Conversion: &v1alpha1.VersionConversion{
			ToStorage: rules(setRule("a", "1 +")), FromStorage: rules(move("a", "b"))}}, {Name: "v2", Storage: true}}},
			[]string{"spec.api.versions[0].conversion.toStorage[0].set.expression"}},
		{"renderVersion not served", v1alpha1.BundleAPI{RenderVersion: "v1", Versions: []v1alpha1.APIVersion{{Name: "v1", Served: ptr.To(false)}, {Name: "v2", Storage: true}}},
			[]string{"spec.api.renderVersion"}},
		{"renderVersion unknown", v1alpha1.BundleAPI{RenderVersion: "v3", Versions: []v1alpha1.APIVersion{{Name: "v2", Storage: true}}},
			[]string{"spec.api.renderVersion"}},
		{"a storage version with a conversion", v1alpha1.BundleAPI{Versions: []v1alpha1.APIVersion{{Name: "v2", Storage: true,
			Conversion: &v1alpha1.VersionConversion{ToStorage: rules(move("a", "b"))}}}},
			[]string{"spec.api.versions[0].conversion"}},
		{"a duplicate name", v1alpha1.BundleAPI{Versions: []v1alpha1.APIVersion{{Name: "v2", Storage: true}, {Name: "v2"}}},
			[]string{"spec.api.versions[1].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.api, nil)
			var ie *InvalidError
			if !errorsAs(err, &ie) {
				t.Fatalf("New: %v, want an *InvalidError", err)
			}
			var got []string
			for _, e := range ie.Errs {
				got = append(got, e.Field)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("fields (-want +got):\n%s\n%v", d, ie)
			}
		})
	}
}

func TestConvertOddAnnotations(t *testing.T) {
	c := threeVersions(t)
	t.Run("records naming each other end", func(t *testing.T) {
		obj := object(t, "v2", `{"name":"a","replicas":1}`)
		ann := annotations(obj)
		ann[AnnotationPrefix+"v1"] = `{"to":"v3","fields":[{"path":["color"],"value":"red"}]}`
		ann[AnnotationPrefix+"v3"] = `{"to":"v1","fields":[{"path":["zone"],"value":"z"}]}`
		got, err := c.Convert(obj, "v1")
		if err != nil {
			t.Fatal(err)
		}
		// The conversion ends; v1's record restores color (its base
		// says color was absent, as it is), and both records are spent.
		if d := cmp.Diff(doc(t, `{"name":"a","size":1,"color":"red"}`), got["spec"]); d != "" {
			t.Errorf("spec (-want +got):\n%s", d)
		}
		if d := cmp.Diff(map[string]any{"note": "keep"}, annotations(got)); d != "" {
			t.Errorf("annotations (-want +got):\n%s", d)
		}
	})
	t.Run("a record that does not decode is dropped", func(t *testing.T) {
		obj := object(t, "v2", `{"name":"a"}`)
		annotations(obj)[AnnotationPrefix+"v1"] = `{not json`
		annotations(obj)[AnnotationPrefix+"v9"] = `{"to":"v2","fields":[]}`
		got, err := c.Convert(obj, "v1")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"note": "keep", AnnotationPrefix + "v9": `{"to":"v2","fields":[]}`}
		if d := cmp.Diff(want, annotations(got)); d != "" {
			t.Errorf("annotations (-want +got):\n%s", d)
		}
	})
}

func TestConvertConcurrently(t *testing.T) {
	c := newAppService(t)
	obj := object(t, "v1", `{"size":3,"legacy":"x","ports":[{"name":"b","port":2},{"name":"a","port":1}]}`)
	want, err := c.Convert(obj, "v2")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 20 {
				got, err := c.Convert(obj, "v2")
				if err == nil && !cmp.Equal(want, got) {
					err = fmt.Errorf("a concurrent conversion differs: %s", cmp.Diff(want, got))
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
