package floor

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	stencilcluster "github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// renderSets renders bundle for n Compositions named like the controller's
// in namespace, as `stencil render` would (plan.NewPlan: placed,
// labelled, in apply order).
func renderSets(ctx context.Context, bundle *v1alpha1.Bundle, namespace string, n int) ([][]*unstructured.Unstructured, error) {
	b, err := templates.LoadObject(bundle)
	if err != nil {
		return nil, err
	}
	apis := stencilcluster.OfflineAPIs()
	sets := make([][]*unstructured.Unstructured, n)
	for i := range n {
		in := templates.Input{Composition: templates.CompositionInfo{Name: fixture.CompositionName(i), Namespace: namespace}}
		planned, err := plan.NewPlan(ctx, inProcess{}, b, in, apis)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", fixture.CompositionName(i), err)
		}
		for _, o := range planned.Objects {
			// Without the part-of label, the floor's objects stay out of
			// the controller's label-selected cache.
			labels := o.GetLabels()
			delete(labels, applyset.LabelPartOf)
			o.SetLabels(labels)
		}
		sets[i] = planned.Objects
	}
	return sets, nil
}

// inProcess renders in the harness's own process: the floor needs the
// objects, not the sandbox the controller renders in.
type inProcess struct{}

var _ plan.Renderer = inProcess{}

// Render renders b for in with templates.RenderContext.
func (inProcess) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	return templates.RenderContext(ctx, b, in)
}
