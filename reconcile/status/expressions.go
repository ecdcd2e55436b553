package status

import (
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// ExpressionParent is the parent as the Bundle's expressions see it, or
// nil when the Bundle declares none: the conversion is not made on every
// pass of a parent whose Bundle has no outputs or readiness rules.
func ExpressionParent(p applyset.Parent, set *outputs.Set) map[string]any {
	if set.Empty() {
		return nil
	}
	return ParentObject(p)
}
