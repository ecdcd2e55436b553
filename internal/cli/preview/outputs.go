package preview

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// Outputs are set's outputs that would change for parent, whose
// status in the cluster is liveStatus (nil: none yet), over the dry run's
// would-be members: "status.outputs.NAME OLD → NEW" for a Composition,
// "status.NAME OLD → NEW" for an instance, sorted by name.
func Outputs(ctx context.Context, set *outputs.Set, parent applyset.Parent, liveStatus map[string]any, previews []applyset.Preview) []string {
	field := "status."
	var current map[string]apiextensionsv1.JSON
	if parent.ParentGVK().GroupKind() == applyset.CompositionGroupKind {
		field = "status.outputs."
		if outs, ok := liveStatus["outputs"].(map[string]any); ok {
			current = make(map[string]apiextensionsv1.JSON, len(outs))
			for k, v := range outs {
				if raw, err := json.Marshal(v); err == nil {
					current[k] = apiextensionsv1.JSON{Raw: raw}
				}
			}
		}
	} else if liveStatus != nil {
		live := &unstructured.Unstructured{Object: map[string]any{"status": liveStatus}}
		current = applyset.NewInstance(live, *parent.ParentSpec()).ParentStatus().Outputs
	}
	// The expressions see the parent as it would be: its new spec, its
	// status as it is (an apply does not write status).
	obj := copyWithStatus(status.ParentObject(parent), liveStatus)
	var lines []string
	for _, c := range status.PreviewOutputs(ctx, set, obj, previews, current) {
		lines = append(lines, fmt.Sprintf("%s%s %s → %s", field, c.Name, c.Old, c.New))
	}
	return lines
}

// copyWithStatus is a shallow copy of obj whose status is st (none when
// st is nil).
func copyWithStatus(obj, st map[string]any) map[string]any {
	out := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		out[k] = v
	}
	delete(out, "status")
	if st != nil {
		out["status"] = st
	}
	return out
}
