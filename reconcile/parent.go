package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Finalizer keeps a Composition until its members are deleted or orphaned.
const Finalizer = "stencil.dev/finalizer"

// parentState is the ApplySet metadata stencil keeps on a Composition.
type parentState struct {
	inventory inventory
	finalizer bool
}

// readParent reads the Composition's recorded inventory and finalizer from
// the API server: never from the cache, which may not have seen the last
// widening yet.
func (r *CompositionReconciler) readParent(ctx context.Context, comp *v1alpha1.Composition) (parentState, error) {
	live := &v1alpha1.Composition{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(comp), live); err != nil {
		return parentState{}, fmt.Errorf("read Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	return parentState{
		inventory: parseInventory(live.Annotations).normalize(comp.Namespace),
		finalizer: slices.Contains(live.Finalizers, Finalizer),
	}, nil
}

// writeParent server-side-applies the ApplySet metadata (id label, tooling,
// group-kinds and namespaces annotations, finalizer) to the Composition, when
// it differs from what was read (from). It returns the new state.
func (r *CompositionReconciler) writeParent(ctx context.Context, comp *v1alpha1.Composition, from, to parentState) (parentState, error) {
	to.inventory = to.inventory.normalize(comp.Namespace)
	id := ApplySetID(comp.Name, comp.Namespace, CompositionGroupKind)
	tooling := "stencil/" + r.Options.Version
	gks, nss := to.inventory.annotations()
	fromGKs, fromNSs := from.inventory.annotations()
	if from.finalizer == to.finalizer && gks == fromGKs && nss == fromNSs &&
		comp.Labels[LabelApplySetID] == id && comp.Annotations[AnnotationTooling] == tooling {
		return to, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	u.SetNamespace(comp.Namespace)
	u.SetName(comp.Name)
	u.SetLabels(map[string]string{LabelApplySetID: id})
	u.SetAnnotations(map[string]string{AnnotationTooling: tooling, AnnotationGroupKinds: gks, AnnotationNamespaces: nss})
	if to.finalizer {
		u.SetFinalizers([]string{Finalizer})
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return from, fmt.Errorf("write ApplySet metadata on Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	// What was written joins the Composition's other labels and annotations,
	// which templates read later in this pass.
	labels, annotations := maps.Clone(comp.Labels), maps.Clone(comp.Annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(labels, u.GetLabels())
	maps.Copy(annotations, u.GetAnnotations())
	comp.Labels, comp.Annotations = labels, annotations
	return to, nil
}
