package reconcile

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Preview is what applying one planned object would do, found with a
// server-side dry-run apply under stencil's field manager.
type Preview struct {
	// Desired is the planned object.
	Desired *unstructured.Unstructured
	// Live is the object as it is, nil when it does not exist.
	Live *unstructured.Unstructured
	// Applied is the object as the apply would leave it.
	Applied *unstructured.Unstructured
	// Err says why the dry run failed (a refusal, a validation error).
	Err error
}

// DryRun previews the apply of every planned object, as the controller
// would make it (field manager "stencil", forced ownership), without
// changing anything.
func DryRun(ctx context.Context, c client.Client, planned *plan.Plan) []Preview {
	out := make([]Preview, 0, len(planned.Objects))
	for _, desired := range planned.Objects {
		p := Preview{Desired: desired}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		switch err := c.Get(ctx, client.ObjectKeyFromObject(desired), live); {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		case err != nil:
			p.Err = fmt.Errorf("read %s: %w", applyset.Ref(desired), err)
		default:
			p.Live = live
		}
		if p.Err == nil && p.Live != nil {
			if other := p.Live.GetLabels()[applyset.LabelPartOf]; other != "" && other != planned.ID {
				p.Err = &applyset.ForeignMemberError{Object: applyset.Ref(desired), ApplySet: other}
			}
		}
		if p.Err == nil {
			applied := desired.DeepCopy()
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
				client.FieldOwner(applyset.FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
				p.Err = fmt.Errorf("dry-run apply %s: %w", applyset.Ref(desired), applyset.Redact(desired, err))
			} else {
				p.Applied = applied
			}
		}
		out = append(out, p)
	}
	return out
}

// PruneCandidate is a live member the controller would take out of the
// set after applying a plan.
type PruneCandidate struct {
	// Ref names the member as Kind/namespace/name.
	Ref string
	// Orphan is true for a member annotated helm.sh/resource-policy: keep:
	// it would lose its part-of label and stay, not be deleted.
	Orphan bool
}

// PruneCandidates lists the live members of the Composition's ApplySet that
// the controller would prune after applying plan: what it records, minus
// what plan renders, minus what it never deletes (see prunable) and the
// Helm hooks prune spares (see spare). Members annotated
// helm.sh/resource-policy: keep are listed as orphaned.
func PruneCandidates(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, comp applyset.Parent, planned *plan.Plan) ([]PruneCandidate, error) {
	live, err := reread(ctx, reader, comp)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if prune := live.ParentSpec().Prune; prune != nil && !*prune {
		return nil, nil
	}
	p := &applyset.Pruner{Lister: reader, Mapper: mapper, ID: planned.ID}
	listed := p.List(ctx, applyset.ParseInventory(live.GetAnnotations()).Union(planned.Inventory), comp.GetNamespace())
	if len(listed.Unlisted) > 0 {
		return nil, fmt.Errorf("cannot list members of %v", listed.Unlisted)
	}
	refs := map[string]bool{}
	for _, o := range planned.Objects {
		refs[applyset.Ref(o)] = true
	}
	hooks := PlannedHooks(planned.Objects)
	var out []PruneCandidate
	for _, m := range listed.Members {
		if refs[m.Ref()] || !applyset.Prunable(m, map[types.UID]bool{}) {
			continue
		}
		if spare, err := SpareHook(ctx, reader, m, hooks); err != nil || spare {
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, PruneCandidate{Ref: m.Ref(), Orphan: plan.Kept(&m.Meta)})
	}
	return out, nil
}
