package infer_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

var update = flag.Bool("update", false, "rewrite the golden schemas")

// shop is a chart with helpers, a list of objects, a map ranged over,
// values written out whole, a subchart (disabled by the defaults) and
// globals.
const shop = "testdata/shop"

func loadShop(t *testing.T) *templates.Bundle {
	t.Helper()
	b, err := templates.Load(os.DirFS(shop), templates.LoadOptions{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenSchema: the schema inferred of testdata/shop is
// testdata/shop.schema.json (go test -update rewrites it).
func TestGoldenSchema(t *testing.T) {
	r, err := infer.Bundle(loadShop(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/shop.schema.json"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", golden, diff)
	}
	if len(r.Notes) > 0 || r.Incomplete {
		t.Errorf("notes %v, incomplete %v: want every template followed", r.Notes, r.Incomplete)
	}
}

// withSchema is b's spec with js as its values.schema.json.
func withSchema(t *testing.T, b *templates.Bundle, js []byte) v1alpha1.BundleSpec {
	t.Helper()
	spec := b.Spec()
	spec.Files[templates.SchemaFileJSON] = string(js)
	return spec
}

// TestInferredSchemaValidates: the inferred schema, as the chart's
// values.schema.json, takes values.yaml and values a user gives in the
// open parts (a subchart's, a map's entries, what toYaml writes), and
// refuses a misspelt key and a wrong type where values.yaml is concrete.
func TestInferredSchemaValidates(t *testing.T) {
	b := loadShop(t)
	r, err := infer.Bundle(b)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := r.JSON()
	withJS, err := templates.LoadObject(&v1alpha1.Bundle{Spec: withSchema(t, b, js)})
	if err != nil {
		t.Fatalf("the chart with its inferred schema: %v", err)
	}
	for _, c := range []struct {
		values string
		refuse string // "" accepted
	}{
		{`{}`, ""},
		{`{"cache": {"enabled": true, "size": "1Gi", "evictionPolicy": "lfu"}, "global": {"anything": 1}}`, ""},
		{`{"env": {"A": "1"}, "resources": {"limits": {"nvidia.com/gpu": 1}}, "podAnnotations": {"a": "b"}}`, ""},
		{`{"ports": [{"name": "h", "containerPort": 1}], "service": {"loadBalancerIP": "1.2.3.4"}, "nameOverride": "x"}`, ""},
		{`{"replicaCount": 3}`, "values.replicaCount"},
		{`{"replicas": "three"}`, "values.replicas"},
		{`{"service": {"prot": 80}}`, "values.service.prot"},
		{`{"ports": [{"name": "h", "hostPort": 1}]}`, "values.ports[0].hostPort"},
		{`{"cache": {"sise": "1Gi"}}`, "values.cache.sise"},
	} {
		_, err := templates.MergeValues(withJS, &apiextensionsv1.JSON{Raw: []byte(c.values)})
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: %v, want it accepted", c.values, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want it refused naming %s", c.values, err, c.refuse)
		}
	}
}

// TestInferredSchemaPublishes: the inferred schema becomes a published
// kind's spec schema: structural, closed objects without
// x-kubernetes-preserve-unknown-fields, open ones with it, a subchart's
// global inlined from the root's.
func TestInferredSchemaPublishes(t *testing.T) {
	b := loadShop(t)
	r, err := infer.Bundle(b)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := r.JSON()
	spec := withSchema(t, b, js)
	spec.API = &v1alpha1.BundleAPI{Group: "shop.example.com", Kind: "Shop", Version: "v1"}
	crd, err := publish.CRD("shop", spec)
	if err != nil {
		t.Fatalf("publish.CRD: %v", err)
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	preserves := func(p *apiextensionsv1.JSONSchemaProps) bool {
		return p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields
	}
	service := s.Properties["service"]
	for name, p := range map[string]*apiextensionsv1.JSONSchemaProps{
		"spec": &s, "spec.service": &service,
	} {
		if preserves(p) {
			t.Errorf("%s keeps unknown fields, want it closed (values.yaml is concrete)", name)
		}
	}
	resources, env, cache := s.Properties["resources"], s.Properties["env"], s.Properties["cache"]
	cacheGlobal := cache.Properties["global"]
	for name, p := range map[string]*apiextensionsv1.JSONSchemaProps{
		"spec.resources": &resources, "spec.cache.global": &cacheGlobal,
	} {
		if !preserves(p) {
			t.Errorf("%s drops unknown fields, want x-kubernetes-preserve-unknown-fields", name)
		}
	}
	if env.AdditionalProperties == nil || env.AdditionalProperties.Schema == nil {
		t.Errorf("spec.env = %+v, want a map (additionalProperties) of its entries", env)
	}
	if got := cacheGlobal.Properties["imageRegistry"].Type; got != "string" {
		t.Errorf("spec.cache.global.imageRegistry type %q, want the root's global inlined (string)", got)
	}
	var round bytes.Buffer
	if err := json.Indent(&round, js, "", "  "); err != nil {
		t.Fatal(err)
	}
}
