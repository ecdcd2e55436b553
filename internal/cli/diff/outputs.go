package diff

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/preview"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// outputLines are the lines diff -f prints for the Bundle's status outputs
// the change would alter, one per output ("# Composition team-a/cm:
// status.outputs.phase \"creating\" → \"ready\""; an instance's outputs
// are its top-level status fields, status.phase), computed over the dry
// run's would-be members (see status.PreviewOutputs) and compared with
// the live parent's, which it reads. An output the dry run cannot compute
// prints nothing.
func outputLines(ctx context.Context, s *session.Session, parent applyset.Parent, b *templates.Bundle, previews []applyset.Preview) ([]string, error) {
	set, err := outputs.FromBundle(outputs.Stored, b.Spec())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", parents.Describe(parent), err)
	}
	if !set.HasOutputs() {
		return nil, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(parent.ParentGVK())
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: parent.GetNamespace(), Name: parent.GetName()}, live); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: read its status: %w", parents.Describe(parent), err)
	}
	liveStatus, _ := live.Object["status"].(map[string]any)
	var lines []string
	for _, c := range preview.Outputs(ctx, set, parent, liveStatus, previews) {
		lines = append(lines, fmt.Sprintf("# %s: %s\n", parents.Describe(parent), c))
	}
	return lines, nil
}
