package cli

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/templates"
)

// outputLines are the lines diff prints for the Bundle's status outputs
// the change would alter, one per output ("# Composition team-a/cm:
// status.outputs.phase \"creating\" → \"ready\""; an instance's outputs
// are its top-level status fields, status.phase), computed over the dry
// run's would-be members (see status.PreviewOutputs) and compared with
// the live parent's. An output the dry run cannot compute prints nothing.
func outputLines(ctx context.Context, s *session, parent applyset.Parent, b *templates.Bundle, previews []applyset.Preview) ([]string, error) {
	set, err := outputs.FromBundle(outputs.Stored, b.Spec())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describeParent(parent), err)
	}
	if !set.HasOutputs() {
		return nil, nil
	}
	gvk := parent.ParentGVK()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: parent.GetNamespace(), Name: parent.GetName()}, live); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: read its status: %w", describeParent(parent), err)
	}
	obj := status.ParentObject(parent)
	field := "status."
	var current map[string]apiextensionsv1.JSON
	liveStatus, _ := live.Object["status"].(map[string]any)
	if gvk.GroupKind() == applyset.CompositionGroupKind {
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
		current = applyset.NewInstance(live, *parent.ParentSpec()).ParentStatus().Outputs
	}
	// The expressions see the parent as it would be: its new spec, its
	// status as it is (an apply does not write status).
	obj = copyWithStatus(obj, liveStatus)
	var lines []string
	for _, c := range status.PreviewOutputs(ctx, set, obj, previews, current) {
		lines = append(lines, fmt.Sprintf("# %s: %s%s %s → %s\n", describeParent(parent), field, c.Name, c.Old, c.New))
	}
	return lines, nil
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
