package prune

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Candidates lists the live members of the Composition's ApplySet that
// the controller would prune after applying plan (applyset.PruneCandidates),
// sparing the Helm hooks prune spares (see SpareHook). Members annotated
// helm.sh/resource-policy: keep are listed as orphaned.
func Candidates(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, comp applyset.Parent, planned *plan.Plan) ([]applyset.PruneCandidate, error) {
	hooks := PlannedHooks(planned.Objects)
	return applyset.PruneCandidates(ctx, reader, mapper, comp, planned.ID, planned.Inventory, planned.Objects,
		func(ctx context.Context, m applyset.Member) (bool, bool, error) {
			if planned.HoldsBack(m.GVK.GroupKind(), m.Meta.Namespace, m.Meta.Name, comp.GetNamespace()) {
				return true, false, nil // held back until a value is observed: never pruned for it
			}
			spare, err := SpareHook(ctx, reader, m, hooks)
			return spare, plan.Kept(&m.Meta), err
		})
}
