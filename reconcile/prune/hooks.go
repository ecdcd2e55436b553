package prune

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// PlannedHooks returns the keys (see plan.ObjectKey) of the hooks in the plan.
func PlannedHooks(objs []*unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, u := range objs {
		if plan.IsHook(u) {
			out[plan.ObjectKey(u)] = true
		}
	}
	return out
}

// SpareHook reports whether prune must leave a hook alone, reading it
// live through reader: a hook the render still holds (planned, whether or
// not it runs this revision; Helm, too, leaves hook objects in place), or
// one that is still running. `stencil diff` asks it too, so what it says
// would be pruned is what prune deletes.
func SpareHook(ctx context.Context, reader client.Reader, m applyset.Member, planned map[string]bool) (bool, error) {
	if !plan.IsHook(&m.Meta) || m.Meta.DeletionTimestamp != nil {
		return false, nil
	}
	if planned[m.GVK.Group+"/"+m.GVK.Kind+"/"+m.Meta.Namespace+"/"+m.Meta.Name] {
		return true, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(m.GVK)
	err := reader.Get(ctx, client.ObjectKey{Namespace: m.Meta.Namespace, Name: m.Meta.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return true, fmt.Errorf("read hook %s: %w", m.Ref(), err)
	}
	outcome, _ := plan.OutcomeOf(live)
	return outcome == plan.HookRunning && live.GetUID() == m.Meta.UID, nil
}
