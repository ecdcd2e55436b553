package publish

// The JSON Schema keywords the converter (jsonschema.go) drops, refuses,
// allows under combinators, and passes through.

// annotationKeywords mean nothing to a CRD schema and are dropped.
var annotationKeywords = map[string]bool{
	"$schema": true, "$id": true, "id": true, "$comment": true, "$anchor": true, "$vocabulary": true,
	"$dynamicAnchor": true, "$recursiveAnchor": true, "definitions": true, "$defs": true,
	"title": true, "examples": true, "readOnly": true, "writeOnly": true, "deprecated": true,
	"contentMediaType": true, "contentEncoding": true,
}

// unsupportedKeywords are JSON Schema assertions a CRD schema cannot say.
var unsupportedKeywords = map[string]string{
	"patternProperties":     "a CRD schema cannot constrain keys by pattern: list the properties, or use additionalProperties",
	"propertyNames":         "a CRD schema cannot constrain keys: use x-kubernetes-validations",
	"dependencies":          "a CRD schema has no dependencies: use x-kubernetes-validations",
	"dependentRequired":     "a CRD schema has no dependentRequired: use x-kubernetes-validations",
	"dependentSchemas":      "a CRD schema has no dependentSchemas: use x-kubernetes-validations",
	"if":                    "a CRD schema has no if/then/else: use x-kubernetes-validations",
	"then":                  "a CRD schema has no if/then/else: use x-kubernetes-validations",
	"else":                  "a CRD schema has no if/then/else: use x-kubernetes-validations",
	"contains":              "a CRD schema has no contains: use x-kubernetes-validations",
	"minContains":           "a CRD schema has no minContains: use x-kubernetes-validations",
	"maxContains":           "a CRD schema has no maxContains: use x-kubernetes-validations",
	"prefixItems":           "a CRD list has one schema for every item",
	"additionalItems":       "a CRD list has one schema for every item",
	"unevaluatedProperties": "a CRD schema has no unevaluatedProperties: use additionalProperties",
	"unevaluatedItems":      "a CRD schema has no unevaluatedItems",
	"$dynamicRef":           "a CRD schema has no dynamic references",
	"$recursiveRef":         "a CRD schema has no recursive references",
	"contentSchema":         "a CRD schema cannot validate encoded content",
}

// valueKeywords are what a structural schema allows under allOf, anyOf,
// oneOf and not besides properties, items and the combinators themselves.
var valueKeywords = map[string]bool{
	"required": true, "enum": true, "const": true, "format": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "description": true,
}

// kubernetesKeywords are the x-kubernetes-* keywords a CRD schema knows.
var kubernetesKeywords = map[string]bool{
	"x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true,
	"x-kubernetes-int-or-string": true, "x-kubernetes-list-map-keys": true, "x-kubernetes-list-type": true,
	"x-kubernetes-map-type": true, "x-kubernetes-validations": true,
}
