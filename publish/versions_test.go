package publish_test

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/publish/conversion"
)

func TestDefaultVersionIsConversions(t *testing.T) {
	if publish.DefaultVersion != conversion.DefaultVersion {
		t.Errorf("publish.DefaultVersion %q, conversion.DefaultVersion %q: they must agree", publish.DefaultVersion, conversion.DefaultVersion)
	}
}

func TestVersionsSingleForm(t *testing.T) {
	api := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService"}
	vs := publish.Versions(api)
	if len(vs) != 1 || vs[0].Name != publish.DefaultVersion || !vs[0].Storage || vs[0].Served == nil || !*vs[0].Served {
		t.Errorf("Versions = %+v, want one served storage version %s", vs, publish.DefaultVersion)
	}
	api.Version = "v1"
	if got := publish.StorageVersion(api); got != "v1" {
		t.Errorf("StorageVersion = %q, want v1", got)
	}
	if got := publish.RenderVersion(api); got != "v1" {
		t.Errorf("RenderVersion = %q, want v1", got)
	}
}

func twoVersionBundle() v1alpha1.BundleSpec {
	return v1alpha1.BundleSpec{
		API: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", RenderVersion: "v1", Versions: []v1alpha1.APIVersion{
			{Name: "v1", SchemaFile: "schemas/v1.json", Conversion: &v1alpha1.VersionConversion{
				ToStorage: []v1alpha1.ConversionRule{{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}}}}},
			{Name: "v2", Storage: true, Schema: &apiextensionsv1.JSON{Raw: []byte(`{"properties":{"replicas":{"type":"integer"}},"required":["replicas"]}`)}},
			{Name: "v3", Conversion: &v1alpha1.VersionConversion{}},
		}},
		Files: map[string]string{
			"schemas/v1.json":    `{"type":"object","properties":{"size":{"type":"integer"}}}`,
			"values.schema.json": `{"type":"object","properties":{"replicas":{"type":"integer"},"extra":{"type":"string"}}}`,
			"values.yaml":        "replicas: 1\n",
		},
	}
}

func TestVersionSchemas(t *testing.T) {
	spec := twoVersionBundle()
	got, err := publish.VersionSchemas("apps", spec)
	if err != nil {
		t.Fatalf("VersionSchemas: %v", err)
	}
	if s := got["v1"]; s == nil || s.Properties["size"].Type != "integer" {
		t.Errorf("v1 (schemaFile) = %+v", s)
	}
	if s := got["v2"]; s == nil || s.Type != "object" || len(s.Required) != 0 {
		t.Errorf("v2 (schema) = %+v, want type object and replicas not required (values.yaml has it)", s)
	}
	if s := got["v3"]; s == nil || s.Properties["extra"].Type != "string" {
		t.Errorf("v3 (values schema) = %+v", s)
	}
	if publish.RenderVersion(*spec.API) != "v1" || publish.StorageVersion(*spec.API) != "v2" {
		t.Errorf("render %q storage %q", publish.RenderVersion(*spec.API), publish.StorageVersion(*spec.API))
	}
}

func TestVersionSchemasErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*v1alpha1.BundleSpec)
		field string
	}{
		{"a schema that is no schema", func(s *v1alpha1.BundleSpec) {
			s.API.Versions[1].Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":3}`)}
		}, "spec.api.versions[1].schema"},
		{"a schema of a string", func(s *v1alpha1.BundleSpec) {
			s.API.Versions[1].Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"string"}`)}
		}, "spec.api.versions[1].schema"},
		{"a missing file", func(s *v1alpha1.BundleSpec) { delete(s.Files, "schemas/v1.json") }, "spec.api.versions[0].schemaFile"},
		{"a file that is not JSON", func(s *v1alpha1.BundleSpec) { s.Files["schemas/v1.json"] = "{" }, "schemas/v1.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := twoVersionBundle()
			tt.edit(&spec)
			_, err := publish.VersionSchemas("apps", spec)
			var pe *publish.Error
			if !errors.As(err, &pe) || pe.Reason != publish.ReasonNotStructural || len(pe.Errs) == 0 || !strings.HasPrefix(pe.Errs[0].Field, tt.field) {
				t.Fatalf("VersionSchemas: %v, want a NotStructural *publish.Error naming %s", err, tt.field)
			}
		})
	}
}

func TestConverter(t *testing.T) {
	spec := twoVersionBundle()
	c, err := publish.Converter("apps", spec)
	if err != nil {
		t.Fatalf("Converter: %v", err)
	}
	out, err := c.Convert(map[string]any{"apiVersion": "app.example.com/v1", "kind": "AppService", "spec": map[string]any{"size": int64(2)}}, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if got := out["spec"].(map[string]any)["replicas"]; got != int64(2) {
		t.Errorf("replicas = %v, want 2", got)
	}
	spec.API.Versions[0].Conversion.ToStorage = []v1alpha1.ConversionRule{{Set: &v1alpha1.FieldSet{Path: "a", Expression: "1 +"}}}
	_, err = publish.Converter("apps", spec)
	var pe *publish.Error
	if !errors.As(err, &pe) || pe.Reason != publish.ReasonInvalidAPI || !strings.Contains(err.Error(), "spec.api.versions[0].conversion.toStorage[0].set.expression") {
		t.Errorf("Converter of a bad expression: %v, want an InvalidAPI *publish.Error naming the expression", err)
	}
}
