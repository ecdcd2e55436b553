package blast

import (
	"context"

	"github.com/stencil-dev/stencil/internal/cli/preview"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/status"
	"github.com/stencil-dev/stencil/templates"
)

// blastOutputs is, for diff --bundle, the status outputs the new version
// b would give parent, a parent listed from the cluster (so its status is
// the live one), over the dry run's would-be members, as diff -f
// computes them: "status.outputs.phase \"creating\" → \"ready\"",
// one per output that would change and can be computed. A new version
// that declares an output the parent does not have yet shows it as
// (none) → value.
func blastOutputs(ctx context.Context, parent applyset.Parent, b *templates.Bundle, previews []applyset.Preview) ([]string, error) {
	set, err := outputs.FromBundle(outputs.Stored, b.Spec())
	if err != nil {
		return nil, err
	}
	if !set.HasOutputs() {
		return nil, nil
	}
	liveStatus, _ := status.ParentObject(parent)["status"].(map[string]any)
	return preview.Outputs(ctx, set, parent, liveStatus, previews), nil
}
