package templates_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// chartSchema is a values.schema.json as charts write it, in draft-07:
// $schema, definitions, $ref, a type list with "null", oneOf,
// additionalProperties, required, format, pattern, and a default that
// Helm does not apply (JSON Schema's default is an annotation).
const chartSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "additionalProperties": false,
  "required": ["image"],
  "definitions": {
    "port": {"type": "integer", "minimum": 1, "maximum": 65535}
  },
  "properties": {
    "image": {
      "type": "object",
      "required": ["repository"],
      "properties": {
        "repository": {"type": "string", "minLength": 1},
        "tag": {"type": ["string", "null"]},
        "pullPolicy": {"oneOf": [{"enum": ["Always", "IfNotPresent", "Never"]}, {"type": "null"}]}
      }
    },
    "service": {"type": "object", "properties": {"port": {"$ref": "#/definitions/port"}}},
    "ports": {"type": "array", "items": {"$ref": "#/definitions/port"}},
    "replicas": {"type": "integer", "default": 3},
    "email": {"type": "string", "format": "email"},
    "password": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8}
  }
}`

// schemaChart is the chart the tests render: its ConfigMap shows the
// values the templates see.
func schemaChart(schema string) map[string]string {
	return map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml":        "image:\n  repository: nginx\n  tag: \"1.27\"\nservice:\n  port: 80\n",
		"values.schema.json": schema,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  replicas: \"{{ .Values.replicas | default \"unset\" }}\"\n  port: \"{{ .Values.service.port }}\"\n",
	}
}

func renderSchemaChart(t *testing.T, files map[string]string, vals string, mutate ...func(*v1alpha1.BundleSpec)) (map[string]any, error) {
	t.Helper()
	spec := v1alpha1.BundleSpec{Files: files}
	for _, m := range mutate {
		m(&spec)
	}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: spec})
	if err != nil {
		return nil, err
	}
	objs, err := templates.Render(b, templates.Input{Values: values(vals), Composition: web})
	if err != nil {
		return nil, err
	}
	return objs[0].Object["data"].(map[string]any), nil
}

// TestJSONSchemaValid: valid values render, and the schema's default is
// not applied (Helm applies none: pkg/chart/common/util/jsonschema.go
// only validates).
func TestJSONSchemaValid(t *testing.T) {
	for _, vals := range []string{"", `{"image":{"tag":null,"pullPolicy":"Always"},"ports":[80,443],"email":"a@example.com","password":"abc"}`} {
		got, err := renderSchemaChart(t, schemaChart(chartSchema), vals)
		if err != nil {
			t.Fatalf("values %s: %v", vals, err)
		}
		if diff := cmp.Diff(map[string]any{"replicas": "unset", "port": "80"}, got); diff != "" {
			t.Errorf("values %s (-want +got):\n%s", vals, diff)
		}
	}
}

// TestJSONSchemaViolations: every violation is reported at once, each
// with its field path, sorted, never with the value; what Helm would
// report (the same library, draft and options) is what fails.
func TestJSONSchemaViolations(t *testing.T) {
	const secret = "Hunter2-S3cret"
	_, err := renderSchemaChart(t, schemaChart(chartSchema), `{
		"image": {"repository": null, "tag": 5, "pullPolicy": "Sometimes"},
		"service": {"port": 70000},
		"ports": [80, 0],
		"extra": true,
		"email": "`+secret+`",
		"password": "`+secret+`"}`)
	var re *templates.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RenderError", err)
	}
	want := strings.Join([]string{
		"values.email: is not a valid email", // format is asserted by draft-07
		"values.extra: not allowed (additionalProperties)",
		"values.image.pullPolicy: 'oneOf' failed, none matched (got string, want null | value must be one of 'Always', 'IfNotPresent', 'Never')",
		"values.image.repository: Required value", // null deletes the key, as in Helm
		"values.image.tag: got number, want null or string",
		"values.password: does not match pattern \"^[a-z]+$\"",
		"values.password: must be at most 8 characters long",
		"values.ports[1]: must be >= 1",
		"values.service.port: must be <= 65535",
	}, "; ")
	if re.Msg != want {
		t.Errorf("message:\n%s\nwant:\n%s", re.Msg, want)
	}
	if re.Path != "values.email" {
		t.Errorf("path %q, want values.email", re.Path)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "70000") {
		t.Errorf("the error quotes a value: %v", err)
	}
}

// TestJSONSchemaDrafts: the draft is the schema's $schema, 2020-12
// without one (Helm leaves the library's default); format is an
// assertion up to draft-07 only.
func TestJSONSchemaDrafts(t *testing.T) {
	tests := []struct {
		name, schema, values, want string
	}{
		{"draft-04: boolean exclusiveMaximum", `{"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.com/s", "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": true}}}`,
			`{"n": 5}`, "values.n: must be < 5"},
		{"draft-06: const", `{"$schema": "http://json-schema.org/draft-06/schema#", "properties": {"n": {"const": 1}}}`,
			`{"n": 2}`, "values.n: value must be 1"},
		{"draft 2019-09: $defs and $ref beside other keywords", `{"$schema": "https://json-schema.org/draft/2019-09/schema", "$defs": {"s": {"type": "string"}}, "properties": {"n": {"$ref": "#/$defs/s", "maxLength": 1}}}`,
			`{"n": "ab"}`, "values.n: must be at most 1 characters long"},
		{"2020-12 without $schema: format is an annotation", `{"properties": {"email": {"type": "string", "format": "email"}, "n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "integer"}}}`,
			`{"email": "not-an-email", "n": "x"}`, "values.n: got string, want integer"},
		{"2020-12: prefixItems", `{"$schema": "https://json-schema.org/draft/2020-12/schema", "properties": {"p": {"prefixItems": [{"type": "string"}], "items": false}}}`,
			`{"p": ["a", "b"]}`, "values.p[1]: not allowed (the schema is false)"},
		{"propertyNames: the name is the path, never quoted twice", `{"properties": {"labels": {"propertyNames": {"pattern": "^[a-z]+$"}}}}`,
			`{"labels": {"ok": "x", "Bad": "y"}}`, "values.labels.Bad: not a valid property name (propertyNames)"},
		{"urn: reference allows all, as Helm's urnLoader", `{"properties": {"n": {"$ref": "urn:example:unknown"}}}`, `{"n": 1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := schemaChart(tt.schema)
			_, err := renderSchemaChart(t, files, tt.values)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestJSONSchemaLoadErrors: a schema that is not valid, or refers to
// another document, fails to load, naming the file; nothing is fetched.
func TestJSONSchemaLoadErrors(t *testing.T) {
	tests := []struct{ name, schema, want string }{
		{"remote $ref", `{"properties": {"n": {"$ref": "https://example.invalid/port.json"}}}`,
			`values.schema.json: $ref https://example.invalid/port.json: stencil loads no schema from a file or the network`},
		{"file $ref", `{"properties": {"n": {"$ref": "port.json#/x"}}}`,
			`values.schema.json: $ref file:///port.json: stencil loads no schema`},
		{"not a JSON Schema", `{"type": "object", "properties": {"n": {"type": "strin"}}}`,
			`values.schema.json: not a valid JSON Schema: at /properties/n/type: 'anyOf' failed (got string, want array | value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string')`},
		{"not JSON", "{\n  \"type\": \"object\",\n  \"properties\": {,}\n}", `values.schema.json:3: not valid JSON`},
		{"unknown draft", `{"$schema": "http://json-schema.org/draft-03/schema#"}`, `values.schema.json: $schema http://json-schema.org/draft-03/schema#: not a draft stencil knows`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderSchemaChart(t, schemaChart(tt.schema), "")
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to start with %q", err, tt.want)
			}
		})
	}
}

// TestBothSchemas: with spec.schema (OpenAPI v3) and values.schema.json
// (JSON Schema), the values are defaulted and validated by the first,
// then validated, defaults included, by the second; every violation of
// both is reported.
func TestBothSchemas(t *testing.T) {
	openAPI := func(s *v1alpha1.BundleSpec) {
		s.Schema = values(`{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"replicas":{"type":"integer","default":1},"name":{"type":"string","maxLength":3}}}`)
	}
	jsonSchema := `{"properties": {"replicas": {"type": "integer", "minimum": 2}, "name": {"pattern": "^[a-z]+$"}}}`
	_, err := renderSchemaChart(t, schemaChart(jsonSchema), `{"name":"ABCDE"}`, openAPI)
	want := "values.name: Too long: may not be more than 3 bytes; values.name: does not match pattern \"^[a-z]+$\"; values.replicas: must be >= 2"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
	got, err := renderSchemaChart(t, schemaChart(jsonSchema), `{"replicas":2}`, openAPI)
	if err != nil || got["replicas"] != "2" {
		t.Errorf("valid values: %v, %v", got, err)
	}
}
