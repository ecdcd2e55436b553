package versions

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

// repoExample is examples/versions of this repository.
func repoExample(t *testing.T) example {
	t.Helper()
	ex, err := loadExample(filepath.Join("..", "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

// render renders b for the instance ns/name whose spec is values.
func render(t *testing.T, b *templates.Bundle, ns, name string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	raw, err := utiljson.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.RenderContext(context.Background(), b, templates.Input{Values: &apiextensionsv1.JSON{Raw: raw},
		Composition: templates.CompositionInfo{Name: name, Namespace: ns}})
	if err != nil {
		t.Fatalf("render %s/%s: %v", ns, name, err)
	}
	return objs
}

// TestRevisionsRenderTheSameChildren: an instance written in v1 and
// rendered by the first revision gives the objects its conversion to v2
// (by the example's rules) gives rendered by the evolved one, and by the
// one without v1: no child is written as the kind evolves, when the
// controller does what it says.
func TestRevisionsRenderTheSameChildren(t *testing.T) {
	ex := repoExample(t)
	conv, err := publish.Converter(bundleName, ex.evolvedSpec())
	if err != nil {
		t.Fatal(err)
	}
	var loaded []*templates.Bundle
	first, err := templates.LoadObject(bundle(bundleName, ex.firstSpec()))
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []v1alpha1.BundleSpec{ex.evolvedSpec(), ex.v2OnlySpec()} {
		b, err := templates.LoadObject(bundle(bundleName, spec))
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, b)
	}
	for i := range 5 {
		obj := v1Instance(i, namespaces)
		ns, name := namespace(i%namespaces), instanceName(i)
		want := render(t, first, ns, name, v1Spec(i))
		if wantKinds := 1 + min(1, len(v1Spec(i))-2); len(want) != wantKinds {
			t.Errorf("instance %d renders %d objects, want %d", i, len(want), wantKinds)
		}
		v2, err := conv.Convert(obj, "v2")
		if err != nil {
			t.Fatalf("convert instance %d: %v", i, err)
		}
		for j, b := range loaded {
			got := render(t, b, ns, name, v2["spec"].(map[string]any))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("instance %d, revision %d renders other objects from v2 (-v1 +v2):\n%s", i, j+2, diff)
			}
		}
	}
}

// TestSpecs: the revisions the benchmark writes are the example's: v1
// alone in the single-version form, then v1 deprecated beside v2 stored,
// then v2 alone; the values Bundle publishes nothing and migrates with
// the example's valuesMigrations.
func TestSpecs(t *testing.T) {
	ex := repoExample(t)
	if api := ex.firstSpec().API; api.Version != "v1" || len(api.Versions) != 0 || api.Group != group || api.Kind != kind || api.Plural != plural {
		t.Errorf("first revision's api: %+v", api)
	}
	var got []string
	for _, v := range ex.evolvedSpec().API.Versions {
		got = append(got, v.Name)
		if v.Name == "v1" && (!v.Deprecated || v.Conversion == nil || v.Storage) {
			t.Errorf("evolved v1: %+v", v)
		}
	}
	if !slices.Equal(got, []string{"v1", "v2"}) || publish.StorageVersion(*ex.evolvedSpec().API) != "v2" {
		t.Errorf("evolved versions %v, storage %s", got, publish.StorageVersion(*ex.evolvedSpec().API))
	}
	if vs := ex.v2OnlySpec().API.Versions; len(vs) != 1 || vs[0].Name != "v2" || !vs[0].Storage {
		t.Errorf("v2 only: %+v", vs)
	}
	if first, next := ex.valuesFirstSpec(), ex.valuesNextSpec(); first.API != nil || next.API != nil || len(next.ValuesMigrations) != 2 || next.ValuesMigrations[0].Name != "size-to-replicas" {
		t.Errorf("values Bundle: api %v, %v; migrations %+v", first.API, next.API, next.ValuesMigrations)
	}
	if ex.composition.Spec.Values == nil {
		t.Errorf("the example's Composition has no values")
	}
}
