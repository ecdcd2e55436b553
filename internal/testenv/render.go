package testenv

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// InProcess is a plan.Renderer that renders in the test process
// (templates.RenderContext), where the controller renders in its
// sandbox's workers: for tests that plan without a controller.
type InProcess struct{}

var _ plan.Renderer = InProcess{}

// Render renders b with in.
func (InProcess) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	return templates.RenderContext(ctx, b, in)
}
