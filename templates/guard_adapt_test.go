package templates_test

import (
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// TestVariadicFunctions: sprig's variadic functions (omit, pick, without,
// ...) take their arguments as in Helm through the guard's adapters.
func TestVariadicFunctions(t *testing.T) {
	b := bundleOrNil(map[string]string{
		"values.yaml": "m: {a: 1, b: 2, c: 3}\nl: [p, q, r]\n",
		"templates/t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n" +
			"  omit: {{ omit .Values.m \"a\" \"b\" | toJson | quote }}\n" +
			"  pick: {{ pick .Values.m \"a\" | toJson | quote }}\n" +
			"  without: {{ without .Values.l \"p\" \"r\" | toJson | quote }}\n",
	})
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	data := objs[0].Object["data"].(map[string]any)
	for k, want := range map[string]string{"omit": `{"c":3}`, "pick": `{"a":1}`, "without": `["q"]`} {
		if data[k] != want {
			t.Errorf("%s gave %v, want %s", k, data[k], want)
		}
	}
}
