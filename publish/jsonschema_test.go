package publish_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/publish"
)

// specSchemaOf builds the CRD of appService with values.schema.json
// (and no spec.schema) and returns its spec schema as JSON.
func specSchemaOf(t *testing.T, schema string) (string, error) {
	t.Helper()
	spec := appService()
	spec.Schema = nil
	spec.Files = map[string]string{"values.schema.json": schema}
	crd, err := publish.CRD("appservice", spec)
	if err != nil {
		return "", err
	}
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	s.Description = ""
	return jsonOf(t, s), nil
}

func TestJSONSchemaConversion(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		// types
		{"closed object", `{"type":"object","additionalProperties":false,"required":["size"],"properties":{"size":{"type":"integer"}}}`,
			`{"type":"object","required":["size"],"properties":{"size":{"type":"integer"}}}`},
		{"open object keeps unknown fields", `{"type":"object","properties":{"size":{"type":"integer"}}}`,
			`{"type":"object","properties":{"size":{"type":"integer"}},"x-kubernetes-preserve-unknown-fields":true}`},
		{"no type at the root, properties imply object", `{"additionalProperties":false,"properties":{"a":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"untyped property holds anything", `{"type":"object","additionalProperties":false,"properties":{"any":{"description":"d"}}}`,
			`{"type":"object","properties":{"any":{"description":"d","x-kubernetes-preserve-unknown-fields":true}}}`},
		{"nullable", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":["string","null"]}}}`,
			`{"type":"object","properties":{"a":{"type":"string","nullable":true}}}`},
		{"anyOf of a type and null, as Helm charts write nullable", `{"type":"object","additionalProperties":false,"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`,
			`{"type":"object","properties":{"a":{"type":"string","nullable":true}}}`},
		{"oneOf of integer and string", `{"type":"object","additionalProperties":false,"properties":{"port":{"oneOf":[{"type":"integer"},{"type":"string"}]}}}`,
			`{"type":"object","properties":{"port":{"x-kubernetes-int-or-string":true}}}`},
		{"int or string", `{"type":"object","additionalProperties":false,"properties":{"port":{"type":["string","integer"]}}}`,
			`{"type":"object","properties":{"port":{"x-kubernetes-int-or-string":true}}}`},
		{"map", `{"type":"object","additionalProperties":false,"properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`,
			`{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}}}`},
		// value validations
		{"bounds, lengths, pattern, format, enum, const, default", `{"type":"object","additionalProperties":false,"properties":{
			"n":{"type":"integer","minimum":1,"maximum":5,"default":2,"multipleOf":1},
			"s":{"type":"string","minLength":1,"maxLength":9,"pattern":"^a","format":"hostname","enum":["ab","ac"]},
			"c":{"const":"fixed"},
			"l":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"string"}},
			"o":{"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"integer"}}}}`,
			`{"type":"object","properties":{"c":{"type":"string","enum":["fixed"]},"l":{"type":"array","maxItems":3,"minItems":1,"items":{"type":"string"}},` +
				`"n":{"type":"integer","default":2,"maximum":5,"minimum":1,"multipleOf":1},"o":{"type":"object","maxProperties":2,"minProperties":1,"additionalProperties":{"type":"integer"}},` +
				`"s":{"type":"string","format":"hostname","maxLength":9,"minLength":1,"pattern":"^a","enum":["ab","ac"]}}}`},
		{"draft-7 exclusive bounds", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10}}}`,
			`{"type":"object","properties":{"n":{"type":"number","maximum":10,"exclusiveMaximum":true,"minimum":0,"exclusiveMinimum":true}}}`},
		{"draft-7 exclusive bound stricter than the inclusive one", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"number","minimum":1,"exclusiveMinimum":3,"maximum":5,"exclusiveMaximum":9}}}`,
			`{"type":"object","properties":{"n":{"type":"number","maximum":5,"minimum":3,"exclusiveMinimum":true}}}`},
		{"root $ref, as generated schemas write it", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/Values","$defs":{"Values":{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer"}}}}}`,
			`{"type":"object","properties":{"n":{"type":"integer"}}}`},
		{"draft-4 exclusive bounds", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`,
			`{"type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true}}}`},
		{"title as description", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","title":"Replicas"}}}`,
			`{"type":"object","properties":{"n":{"description":"Replicas","type":"integer"}}}`},
		{"unique scalars are a set", `{"type":"object","additionalProperties":false,"properties":{"l":{"type":"array","uniqueItems":true,"items":{"type":"string"}}}}`,
			`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}}}`},
		{"value-only anyOf", `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"string"},"b":{"type":"string"}},"anyOf":[{"required":["a"]},{"required":["b"]}]}`,
			`{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`},
		{"x-kubernetes keywords pass through", `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","x-kubernetes-validations":[{"rule":"self > 0"}]}}}`,
			`{"type":"object","properties":{"n":{"type":"integer","x-kubernetes-validations":[{"rule":"self \u003e 0"}]}}}`},
		// references
		{"$ref to definitions and $defs, with a description beside", `{"type":"object","additionalProperties":false,"properties":{
			"a":{"$ref":"#/definitions/port","description":"the port"},"b":{"$ref":"#/$defs/name"}},
			"definitions":{"port":{"type":"integer","maximum":65535}},"$defs":{"name":{"type":"string"}}}`,
			`{"type":"object","properties":{"a":{"description":"the port","type":"integer","maximum":65535},"b":{"type":"string"}}}`},
		{"the same $ref twice is no cycle", `{"type":"object","additionalProperties":false,"properties":{"a":{"$ref":"#/$defs/n"},"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`,
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`},
		{"a $ref under a fragment $id, as schema generators write them", `{"type":"object","additionalProperties":false,"properties":{"a":{"$id":"#/properties/a","type":"object","additionalProperties":false,"properties":{"b":{"$ref":"#/$defs/n"}}}},"$defs":{"n":{"type":"integer"}}}`,
			`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer"}}}}}`},
		// annotations and unknown keywords are dropped
		{"annotations", `{"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","$comment":"c","examples":[1],"type":"object","additionalProperties":false,"properties":{}}`,
			`{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := specSchemaOf(t, tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("spec schema\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestJSONSchemaUnsupported: what a CRD schema cannot say is an error
// naming values.schema.json and the JSON pointer.
func TestJSONSchemaUnsupported(t *testing.T) {
	tests := []struct {
		name, schema, path string
	}{
		{"anyOf with types inside", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","minLength":2},{"type":"integer"}]}}}`, "values.schema.json#/properties/a/anyOf/0/type"},
		{"anyOf of bare types the node also types", `{"type":"object","properties":{"a":{"type":"string","anyOf":[{"type":"string"},{"type":"null"}]}}}`, "values.schema.json#/properties/a/anyOf/0/type"},
		{"oneOf with a default inside", `{"type":"object","oneOf":[{"default":1}]}`, "values.schema.json#/oneOf/0/default"},
		{"remote $ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "values.schema.json#/properties/a/$ref"},
		{"$ref under a nested $id", `{"type":"object","properties":{"a":{"$id":"https://example.com/a.json","properties":{"b":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"string"}}}},"$defs":{"n":{"type":"integer"}}}`,
			"values.schema.json#/properties/a/properties/b/$ref"},
		{"$ref to nothing", `{"type":"object","properties":{"a":{"$ref":"#/$defs/none"}}}`, "values.schema.json#/properties/a/$ref"},
		{"recursive $ref", `{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			"values.schema.json#/$defs/node/properties/children/items/$ref"},
		{"patternProperties", `{"type":"object","patternProperties":{"^x-":{"type":"string"}}}`, "values.schema.json#/patternProperties"},
		{"if/then/else", `{"type":"object","if":{"required":["a"]},"then":{"required":["b"]}}`, "values.schema.json#/if"},
		{"dependencies", `{"type":"object","dependencies":{"a":["b"]}}`, "values.schema.json#/dependencies"},
		{"tuple items", `{"type":"object","properties":{"p":{"type":"array","items":[{"type":"string"}]}}}`, "values.schema.json#/properties/p/items"},
		{"several types", `{"type":"object","properties":{"a":{"type":["string","boolean"]}}}`, "values.schema.json#/properties/a/type"},
		{"unique objects", `{"type":"object","properties":{"l":{"type":"array","uniqueItems":true,"items":{"type":"object"}}}}`, "values.schema.json#/properties/l/uniqueItems"},
		{"properties and an additionalProperties schema", `{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, "values.schema.json#/additionalProperties"},
		{"false schema", `{"type":"object","properties":{"a":false}}`, "values.schema.json#/properties/a"},
		{"escaped pointer", `{"type":"object","properties":{"a/b~c":{"not":{"type":"string"}}}}`, "values.schema.json#/properties/a~1b~0c/not/type"},
		{"unknown x-kubernetes keyword", `{"type":"object","x-kubernetes-foo":true}`, "values.schema.json#/x-kubernetes-foo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := specSchemaOf(t, tt.schema)
			var pe *publish.Error
			if !errors.As(err, &pe) || pe.Reason != publish.ReasonNotStructural {
				t.Fatalf("err = %v, want a NotStructural *publish.Error", err)
			}
			if !slices.ContainsFunc(pe.Errs, func(e *field.Error) bool { return e.Field == tt.path }) || !strings.Contains(err.Error(), tt.path) {
				t.Errorf("err = %v, want it at %s", err, tt.path)
			}
		})
	}
	// A JSON syntax error names the file, not what it read.
	_, err := specSchemaOf(t, `{"type": "object", "secret-looking": }`)
	if err == nil || !strings.Contains(err.Error(), "values.schema.json") || strings.Contains(err.Error(), "secret-looking") {
		t.Errorf("syntax error: %v", err)
	}
}
