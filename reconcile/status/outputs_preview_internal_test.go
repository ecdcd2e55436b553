package status

import (
	"context"
	"errors"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

func configMap(name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns"},
		"data":     data,
	}}
}

// TestPreviewOutputs: the outputs are computed over what the dry run would
// leave (Applied, else Live when the dry run failed), only those that
// change are returned, and one that cannot be computed is left out rather
// than shown as unset.
func TestPreviewOutputs(t *testing.T) {
	set, err := outputs.Compile(outputs.Stored, []outputs.Output{
		{Name: "size", Type: "string", Value: `members["ConfigMap/cfg"].data.size`},
		{Name: "same", Type: "string", Value: `members["ConfigMap/cfg"].data.same`},
		{Name: "kept", Type: "string", Value: `members["ConfigMap/failed"].data.v`},
		{Name: "missing", Type: "string", Value: `members["ConfigMap/gone"].data.v`},
		{Name: "fresh", Type: "string", Value: `parent.spec.tier`},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	previews := []applyset.Preview{
		{Desired: configMap("cfg", nil), Live: configMap("cfg", map[string]any{"size": "1", "same": "x"}), Applied: configMap("cfg", map[string]any{"size": "3", "same": "x"})},
		{Desired: configMap("failed", nil), Live: configMap("failed", map[string]any{"v": "live"}), Err: errors.New("refused")},
		{Desired: configMap("gone", nil), Err: errors.New("refused")},
	}
	current := map[string]apiextensionsv1.JSON{
		"size":    {Raw: []byte(`"1"`)},
		"same":    {Raw: []byte(` "x" `)},
		"kept":    {Raw: []byte(`"live"`)},
		"missing": {Raw: []byte(`"was"`)},
	}
	parent := map[string]any{"spec": map[string]any{"tier": "gold"}}
	got := PreviewOutputs(context.Background(), set, parent, previews, current)
	want := []OutputPreview{
		{Name: "fresh", Old: "(unset)", New: `"gold"`},
		{Name: "size", Old: `"1"`, New: `"3"`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PreviewOutputs = %+v, want %+v", got, want)
	}
	if got := PreviewOutputs(context.Background(), nil, parent, previews, current); got != nil {
		t.Errorf("no outputs declared: %+v, want none", got)
	}
}
