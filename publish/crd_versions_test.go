package publish_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// appServiceVersions is AppService a year on: v1 (size, a list of ports)
// still served and deprecated, v2 (replicas, a map of ports) stored.
func appServiceVersions() v1alpha1.BundleSpec {
	return v1alpha1.BundleSpec{
		Files: map[string]string{"values.yaml": "replicas: 1\n", "templates/deployment.yaml": "",
			"schemas/v1.json": `{"type":"object","required":["size"],"properties":{"size":{"type":"integer"},` +
				`"ports":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"port":{"type":"integer"}}}}}}`},
		Schema: raw(`{"type":"object","required":["replicas"],"properties":{"replicas":{"type":"integer"},
			"ports":{"type":"object","additionalProperties":{"type":"integer"}}}}`),
		API: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService",
			PrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"}},
			Versions: []v1alpha1.APIVersion{
				{Name: "v1", Deprecated: true, DeprecationWarning: "app.example.com/v1 AppService is deprecated; use v2",
					SchemaFile:     "schemas/v1.json",
					PrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}},
					Conversion: &v1alpha1.VersionConversion{
						ToStorage: []v1alpha1.ConversionRule{
							{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}},
							{Set: &v1alpha1.FieldSet{Path: "ports", Expression: "has(self.ports) ? self.ports.map(p, [p.name, p.port]) : null"}},
						},
						FromStorage: []v1alpha1.ConversionRule{{Move: &v1alpha1.FieldMove{From: "replicas", To: "size"}}},
					}},
				{Name: "v2", Storage: true},
			}},
	}
}

func TestCRDVersions(t *testing.T) {
	crd, err := publish.CRD("appservice", appServiceVersions())
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 2 {
		t.Fatalf("%d versions, want 2", len(crd.Spec.Versions))
	}
	v1, v2 := crd.Spec.Versions[0], crd.Spec.Versions[1]
	if v1.Name != "v1" || !v1.Served || v1.Storage || !v1.Deprecated || v1.DeprecationWarning == nil || *v1.DeprecationWarning != "app.example.com/v1 AppService is deprecated; use v2" {
		t.Errorf("v1: name %s served %t storage %t deprecated %t warning %v", v1.Name, v1.Served, v1.Storage, v1.Deprecated, v1.DeprecationWarning)
	}
	if v2.Name != "v2" || !v2.Served || !v2.Storage || v2.Deprecated || v2.DeprecationWarning != nil {
		t.Errorf("v2: name %s served %t storage %t deprecated %t", v2.Name, v2.Served, v2.Storage, v2.Deprecated)
	}
	spec := func(v apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.JSONSchemaProps {
		return v.Schema.OpenAPIV3Schema.Properties["spec"]
	}
	if s := spec(v1); s.Properties["size"].Type != "integer" || s.Properties["ports"].Type != "array" || !slices.Equal(s.Required, []string{"size"}) {
		t.Errorf("v1 spec: %+v", s)
	}
	// values.yaml gives replicas: the render version does not require it.
	if s := spec(v2); s.Properties["replicas"].Type != "integer" || s.Properties["ports"].Type != "object" || len(s.Required) != 0 {
		t.Errorf("v2 spec: %+v", s)
	}
	if diff := cmp.Diff(v1.Schema.OpenAPIV3Schema.Properties["status"], v2.Schema.OpenAPIV3Schema.Properties["status"]); diff != "" {
		t.Errorf("the versions' status schemas differ (-v1 +v2):\n%s", diff)
	}
	names := func(cols []apiextensionsv1.CustomResourceColumnDefinition) []string {
		var out []string
		for _, c := range cols {
			out = append(out, c.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"Size", "Ready", "Status", "Age"}, names(v1.AdditionalPrinterColumns)); diff != "" {
		t.Errorf("v1 columns (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Replicas", "Ready", "Status", "Age"}, names(v2.AdditionalPrinterColumns)); diff != "" {
		t.Errorf("v2 columns (-want +got):\n%s", diff)
	}
	for _, v := range crd.Spec.Versions {
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s has no status subresource", v.Name)
		}
	}
	want := &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}}
	if diff := cmp.Diff(want, crd.Spec.Conversion); diff != "" {
		t.Errorf("conversion (-want +got):\n%s", diff)
	}
}

// A single version under versions is a CRD of one version, converting
// nothing.
func TestCRDOneVersionListed(t *testing.T) {
	spec := appService()
	spec.API.Version = ""
	spec.API.Versions = []v1alpha1.APIVersion{{Name: "v1", Storage: true}}
	crd, err := publish.CRD("appservice", spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Conversion != nil {
		t.Errorf("%d versions, conversion %v; want 1 and none", len(crd.Spec.Versions), crd.Spec.Conversion)
	}
	old, err := publish.CRD("appservice", appService())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old, crd); diff != "" {
		t.Errorf("versions: [v1] and version: v1 differ (-version +versions):\n%s", diff)
	}
}

func TestNamesRenderVersion(t *testing.T) {
	api := *appServiceVersions().API
	if got := publish.GVK(api); got != (schema.GroupVersionKind{Group: "app.example.com", Version: "v2", Kind: "AppService"}) {
		t.Errorf("GVK = %v, want the storage version v2", got)
	}
	api.RenderVersion = "v1"
	if got := publish.GVR(api); got != (schema.GroupVersionResource{Group: "app.example.com", Version: "v1", Resource: "appservices"}) {
		t.Errorf("GVR = %v, want the render version v1", got)
	}
	for _, v := range []string{"v1", "v2"} {
		if !publish.Serves(&api, schema.GroupVersionKind{Group: "app.example.com", Version: v, Kind: "AppService"}) {
			t.Errorf("Serves(%s) = false", v)
		}
	}
	if publish.Serves(&api, schema.GroupVersionKind{Group: "app.example.com", Version: "v3", Kind: "AppService"}) {
		t.Error("Serves(v3) = true, a version the api does not list")
	}
	if got := publish.Defaulted(*appService().API).Version; got != "v1" {
		t.Errorf("the single-version form's version = %s", got)
	}
}

func TestValidateVersions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*v1alpha1.BundleAPI)
		paths  []string
	}{
		{"both forms", func(a *v1alpha1.BundleAPI) { a.Version = "v1" }, []string{"spec.api.version"}},
		{"no storage", func(a *v1alpha1.BundleAPI) { a.Versions[1].Storage = false }, []string{"spec.api.versions"}},
		{"two storage", func(a *v1alpha1.BundleAPI) { a.Versions[0].Storage = true; a.Versions[0].Conversion = nil }, []string{"spec.api.versions"}},
		{"duplicate", func(a *v1alpha1.BundleAPI) { a.Versions[0].Name = "v2" }, []string{"spec.api.versions[1].name"}},
		{"bad name", func(a *v1alpha1.BundleAPI) { a.Versions[0].Name = "one" }, []string{"spec.api.versions[0].name"}},
		{"warning without deprecation", func(a *v1alpha1.BundleAPI) { a.Versions[0].Deprecated = false }, []string{"spec.api.versions[0].deprecationWarning"}},
		{"schema and file", func(a *v1alpha1.BundleAPI) { a.Versions[0].Schema = raw(`{"type":"object"}`) }, []string{"spec.api.versions[0].schemaFile"}},
		{"storage converts", func(a *v1alpha1.BundleAPI) {
			a.Versions[1].Conversion = &v1alpha1.VersionConversion{ToStorage: []v1alpha1.ConversionRule{{Delete: &v1alpha1.FieldDelete{Path: "x"}}}}
		}, []string{"spec.api.versions[1].conversion"}},
		{"render version unknown", func(a *v1alpha1.BundleAPI) { a.RenderVersion = "v3" }, []string{"spec.api.renderVersion"}},
		{"render version not served", func(a *v1alpha1.BundleAPI) { a.RenderVersion = "v1"; a.Versions[0].Served = ptr.To(false) }, []string{"spec.api.renderVersion"}},
		{"storage not served", func(a *v1alpha1.BundleAPI) { a.Versions[1].Served = ptr.To(false) }, []string{"spec.api.versions[1].served"}},
		{"version column", func(a *v1alpha1.BundleAPI) { a.Versions[0].PrinterColumns[0].Name = "Ready" }, []string{"spec.api.versions[0].printerColumns[0].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := *appServiceVersions().API
			tt.change(&api)
			errs := publish.Validate(api)
			for _, p := range tt.paths {
				if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == p }) {
					t.Errorf("no error at %s: %v", p, errs)
				}
			}
		})
	}
	if errs := publish.Validate(*appServiceVersions().API); len(errs) > 0 {
		t.Errorf("the valid api: %v", errs)
	}
}

// Errors of a version's schema name the version's schema or file.
func TestCRDVersionErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(*v1alpha1.BundleSpec)
		reason string
		path   string
	}{
		{"missing file", func(s *v1alpha1.BundleSpec) { delete(s.Files, "schemas/v1.json") }, publish.ReasonNotStructural, "spec.api.versions[0].schemaFile"},
		{"file not a schema", func(s *v1alpha1.BundleSpec) { s.Files["schemas/v1.json"] = "[" }, publish.ReasonNotStructural, "schemas/v1.json"},
		{"schema not structural", func(s *v1alpha1.BundleSpec) {
			s.API.Versions[0].SchemaFile = ""
			s.API.Versions[0].Schema = raw(`{"type":"object","properties":{"size":{"type":"integer","default":"x"}}}`)
		}, publish.ReasonNotStructural, "spec.api.versions[0].schema.properties[size].default"},
		{"not an object", func(s *v1alpha1.BundleSpec) {
			s.API.Versions[0].SchemaFile = ""
			s.API.Versions[0].Schema = raw(`{"type":"string"}`)
		}, publish.ReasonNotStructural, "spec.api.versions[0].schema"},
		{"column format", func(s *v1alpha1.BundleSpec) { s.API.Versions[0].PrinterColumns[0].Format = "weird" }, publish.ReasonInvalidAPI, "spec.api.versions[0].printerColumns[0].format"},
		{"api column format", func(s *v1alpha1.BundleSpec) { s.API.PrinterColumns[0].Format = "weird" }, publish.ReasonInvalidAPI, "spec.api.printerColumns[0].format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := appServiceVersions()
			tt.change(&spec)
			_, err := publish.CRD("appservice", spec)
			var pe *publish.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *publish.Error", err)
			}
			if pe.Reason != tt.reason || !slices.ContainsFunc(pe.Errs, func(e *field.Error) bool { return e.Field == tt.path }) {
				t.Errorf("reason %s, errors %v; want %s at %s", pe.Reason, pe.Errs, tt.reason, tt.path)
			}
		})
	}
}
