package publish_test

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

func raw(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// appService is the kubebuilder article's AppService as a Bundle spec.
func appService() v1alpha1.BundleSpec {
	return v1alpha1.BundleSpec{
		Files: map[string]string{"values.yaml": "size: 1\nimage: nginx:1.27\n", "templates/deployment.yaml": ""},
		Schema: raw(`{"type":"object","required":["size","image"],"properties":{
			"size":{"type":"integer","minimum":0,"maximum":10},
			"image":{"type":"string","x-kubernetes-validations":[{"rule":"self.contains(':')","message":"image needs a tag"}]},
			"ports":{"type":"array","items":{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}}}}`),
		API: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Version: "v1", ShortNames: []string{"as"},
			Categories:     []string{"all"},
			PrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}},
	}
}

func TestCRD(t *testing.T) {
	crd, err := publish.CRD("appservice", appService())
	if err != nil {
		t.Fatal(err)
	}
	if crd.Name != "appservices.app.example.com" || crd.Spec.Group != "app.example.com" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Errorf("name %s, group %s, scope %s", crd.Name, crd.Spec.Group, crd.Spec.Scope)
	}
	wantLabels := map[string]string{"applyset.kubernetes.io/is-parent-type": "true", "stencil.dev/bundle": "appservice"}
	if diff := cmp.Diff(wantLabels, crd.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(crd.Annotations) != 0 {
		t.Errorf("annotations %v on a CRD outside the protected groups", crd.Annotations)
	}
	wantNames := apiextensionsv1.CustomResourceDefinitionNames{Kind: "AppService", ListKind: "AppServiceList", Plural: "appservices",
		Singular: "appservice", ShortNames: []string{"as"}, Categories: []string{"all"}}
	if diff := cmp.Diff(wantNames, crd.Spec.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(crd.Spec.Versions) != 1 {
		t.Fatalf("%d versions, want 1", len(crd.Spec.Versions))
	}
	v := crd.Spec.Versions[0]
	if v.Name != "v1" || !v.Served || !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("version %s served %t storage %t subresources %+v", v.Name, v.Served, v.Storage, v.Subresources)
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name+"="+c.JSONPath)
	}
	wantCols := []string{"Size=.spec.size", `Ready=.status.conditions[?(@.type=="Ready")].status`, "Status=.status.summary", "Age=.metadata.creationTimestamp"}
	if !slices.Equal(cols, wantCols) {
		t.Errorf("columns %q, want %q", cols, wantCols)
	}
	root := v.Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	// values.yaml gives size and image: an instance need not.
	if len(spec.Required) != 0 || len(root.Required) != 0 {
		t.Errorf("required: spec %q, root %q; values.yaml gives both", spec.Required, root.Required)
	}
	if spec.Properties["size"].Maximum == nil || len(spec.Properties["image"].XValidations) != 1 {
		t.Errorf("the schema's bounds and rules were not carried: %+v", spec.Properties)
	}
	if ports := spec.Properties["ports"]; !slices.Equal(ports.Items.Schema.Required, []string{"port"}) {
		t.Errorf("list items' required = %q, want [port]: values.yaml does not reach into lists", ports.Items.Schema.Required)
	}
}

// TestCRDStatusIsCompositions: the status schema and the Ready and Status
// columns are the generated Composition CRD's (and
// zz_generated.statusschema.go is not stale).
func TestCRDStatusIsCompositions(t *testing.T) {
	data, err := os.ReadFile("../config/crd/bases/stencil.dev_compositions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var comp apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &comp); err != nil {
		t.Fatal(err)
	}
	crd, err := publish.CRD("appservice", appService())
	if err != nil {
		t.Fatal(err)
	}
	// An instance holds its outputs at the top of its status, not under
	// outputs (TestCRDOutputs).
	want := comp.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	delete(want.Properties, "outputs")
	if diff := cmp.Diff(want, crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]); diff != "" {
		t.Errorf("status schema differs from the Composition CRD's; run make manifests (-want +got):\n%s", diff)
	}
	for _, name := range []string{"Ready", "Status"} {
		i := slices.IndexFunc(comp.Spec.Versions[0].AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool { return c.Name == name })
		j := slices.IndexFunc(crd.Spec.Versions[0].AdditionalPrinterColumns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool { return c.Name == name })
		if i < 0 || j < 0 || !cmp.Equal(comp.Spec.Versions[0].AdditionalPrinterColumns[i], crd.Spec.Versions[0].AdditionalPrinterColumns[j]) {
			t.Errorf("column %s differs from the Composition CRD's", name)
		}
	}
}

func TestCRDVariants(t *testing.T) {
	t.Run("no schema: any object", func(t *testing.T) {
		spec := appService()
		spec.Schema = nil
		crd, err := publish.CRD("appservice", spec)
		if err != nil {
			t.Fatal(err)
		}
		s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		if s.Type != "object" || s.XPreserveUnknownFields == nil || !*s.XPreserveUnknownFields || len(s.Properties) != 0 {
			t.Errorf("spec schema = %+v, want {type: object, x-kubernetes-preserve-unknown-fields: true}", s)
		}
	})
	t.Run("Kubernetes' own groups: never approved by the Bundle", func(t *testing.T) {
		for _, group := range []string{"samplecontroller.k8s.io", "k8s.io", "apps.kubernetes.io"} {
			spec := appService()
			spec.API = &v1alpha1.BundleAPI{Group: group, Kind: "Foo"}
			crd, err := publish.CRD("foo", spec)
			if err != nil {
				t.Errorf("CRD in group %s: %v", group, err)
				continue
			}
			if v, ok := crd.Annotations[publish.AnnotationAPIApproved]; ok {
				t.Errorf("CRD in group %s carries %s: %q; only a cluster admin approves it", group, publish.AnnotationAPIApproved, v)
			}
		}
	})
	t.Run("a required value values.yaml lacks stays required", func(t *testing.T) {
		spec := appService()
		spec.Files["values.yaml"] = "size: 1\nimage: null\n"
		crd, err := publish.CRD("appservice", spec)
		if err != nil {
			t.Fatal(err)
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		if got := root.Properties["spec"].Required; !slices.Equal(got, []string{"image"}) {
			t.Errorf("spec required = %q, want [image]", got)
		}
		if !slices.Equal(root.Required, []string{"spec"}) {
			t.Errorf("root required = %q, want [spec]", root.Required)
		}
	})
	t.Run("the Bundle's spec is left alone", func(t *testing.T) {
		spec := appService()
		before := spec.DeepCopy()
		if _, err := publish.CRD("appservice", spec); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, &spec); diff != "" {
			t.Errorf("CRD changed the spec (-before +after):\n%s", diff)
		}
	})
}

// TestCRDErrors: what the API server would refuse is an *Error with its
// reason and the Bundle's field paths, and never a value.
func TestCRDErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1alpha1.BundleSpec)
		bundle string
		reason string
		paths  []string
	}{
		{"invalid api", func(s *v1alpha1.BundleSpec) { s.API.Group = "stencil.dev" }, "appservice", publish.ReasonInvalidAPI, []string{"spec.api.group"}},
		{"bundle name too long for a label", nil, strings.Repeat("a", 64), publish.ReasonInvalidAPI, []string{"metadata.name"}},
		{"property without a type", func(s *v1alpha1.BundleSpec) {
			s.Schema = raw(`{"type":"object","properties":{"size":{"type":"integer"},"extra":{"description":"untyped"}}}`)
		}, "appservice", publish.ReasonNotStructural, []string{"spec.schema.properties[extra].type"}},
		{"values are not an object", func(s *v1alpha1.BundleSpec) { s.Schema = raw(`{"type":"array"}`) }, "appservice", publish.ReasonNotStructural, []string{"spec.schema.type"}},
		{"default of the wrong type", func(s *v1alpha1.BundleSpec) {
			s.Schema = raw(`{"type":"object","properties":{"size":{"type":"integer","default":"secret-default"}}}`)
		}, "appservice", publish.ReasonNotStructural, []string{"spec.schema.properties[size].default"}},
		{"CEL rule that does not compile", func(s *v1alpha1.BundleSpec) {
			s.Schema = raw(`{"type":"object","properties":{"size":{"type":"integer","x-kubernetes-validations":[{"rule":"self >"}]}}}`)
		}, "appservice", publish.ReasonNotStructural, []string{"spec.schema.properties[size].x-kubernetes-validations[0].rule"}},
		{"printer column with a bad format", func(s *v1alpha1.BundleSpec) { s.API.PrinterColumns[0].Format = "weird" }, "appservice", publish.ReasonInvalidAPI, []string{"spec.api.printerColumns[0].format"}},
		{"values.schema.yaml that is not a schema", func(s *v1alpha1.BundleSpec) { s.Schema = raw(`{"type":5}`) }, "appservice", publish.ReasonNotStructural, []string{"spec.schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := appService()
			if tt.mutate != nil {
				tt.mutate(&spec)
			}
			_, err := publish.CRD(tt.bundle, spec)
			var pe *publish.Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *publish.Error", err)
			}
			if pe.Reason != tt.reason {
				t.Errorf("reason %s, want %s (%v)", pe.Reason, tt.reason, err)
			}
			for _, p := range tt.paths {
				if !slices.ContainsFunc(pe.Errs, func(e *field.Error) bool { return e.Field == p }) {
					t.Errorf("no error at %s: %v", p, err)
				}
				if !strings.Contains(err.Error(), p) {
					t.Errorf("message does not name %s: %v", p, err)
				}
			}
			if strings.Contains(err.Error(), "secret-default") {
				t.Errorf("message quotes a value: %v", err)
			}
		})
	}
	if _, err := publish.CRD("x", v1alpha1.BundleSpec{}); err == nil {
		t.Error("a bundle without spec.api gave a CRD")
	}
}

// jsonOf is v as JSON, for comparing schemas in tests.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCRDOutputs: the Bundle's outputs are fields of the instances'
// status, with their types and descriptions (kubectl explain shows them,
// printer columns may use them); one named as a field of stencil's own
// status is refused.
func TestCRDOutputs(t *testing.T) {
	spec := appService()
	spec.Outputs = []v1alpha1.BundleOutput{
		{Name: "availableReplicas", Type: "integer", Description: "copied from the Deployment", Value: "members.web.status.availableReplicas"},
		{Name: "phase", Type: "string", Value: "'ready'"},
		{Name: "endpoints", Type: "array", Value: "[]"},
	}
	spec.API.PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Phase", Type: "string", JSONPath: ".status.phase"}}
	crd, err := publish.CRD("appservice", spec)
	if err != nil {
		t.Fatal(err)
	}
	status := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"]
	if p := status.Properties["availableReplicas"]; p.Type != "integer" || p.Description != "copied from the Deployment" {
		t.Errorf("status.availableReplicas = %+v, want an integer described as declared", p)
	}
	if p := status.Properties["phase"]; p.Type != "string" || !strings.Contains(p.Description, "'ready'") {
		t.Errorf("status.phase = %+v, want a string whose description names its value", p)
	}
	if p := status.Properties["endpoints"]; p.Type != "array" || p.Items == nil {
		t.Errorf("status.endpoints = %+v, want an array with items", p)
	}
	if _, ok := status.Properties["outputs"]; ok {
		t.Error("an instance's status schema has outputs; want the outputs at its top")
	}
	spec.Outputs = append(spec.Outputs, v1alpha1.BundleOutput{Name: "conditions", Type: "string", Value: "'x'"})
	_, err = publish.CRD("appservice", spec)
	if err == nil || !strings.Contains(err.Error(), "spec.outputs[3].name") {
		t.Errorf("an output named conditions: err = %v, want one naming spec.outputs[3].name", err)
	}
}
