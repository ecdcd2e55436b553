package plan

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates"
)

// OwnerReference is the reference a member in its parent's namespace
// carries to the parent (see ownerReference), nil when the parent has
// no UID yet (it does not exist, or the render is offline): the
// reference names the parent by its UID.
func OwnerReference(parent templates.CompositionInfo) *metav1.OwnerReference {
	if parent.UID == "" || parent.Namespace == "" {
		return nil
	}
	ref := &metav1.OwnerReference{APIVersion: parent.APIVersion, Kind: parent.Kind, Name: parent.Name, UID: types.UID(parent.UID), Controller: new(true)}
	if ref.Kind == "" {
		ref.APIVersion, ref.Kind = v1alpha1.GroupVersion.String(), "Composition"
	}
	return ref
}

// ownerReference adds ref, the parent's owner reference, to u, a
// planned member, so that tools which nest objects by their owners
// (Argo CD, kubectl tree, Headlamp) show the member under its parent.
// Only a member in the parent's own namespace gets it (Kubernetes
// refuses an owner in another namespace, and a cluster-scoped object
// cannot have a namespaced owner), and not one the set keeps from the
// garbage collector's reach: annotated helm.sh/resource-policy: keep or
// stencil.dev/prune: disabled (stencil never deletes those, and a
// deletion of the parent that the garbage collector carries out, a
// foreground one, would). The reference claims to be the member's
// controller unless the render already names one; the Applier settles
// that against the live object (applyset.ownerReferences), and
// blockOwnerDeletion is never set (it would need the writer to hold
// update on the parent's finalizers; stencil's own finalizer is what
// holds the parent until its members are dealt with).
func ownerReference(u *unstructured.Unstructured, ref *metav1.OwnerReference, namespace string) {
	if ref == nil || u.GetNamespace() != namespace || Kept(u) || u.GetAnnotations()[applyset.AnnotationPrune] == "disabled" {
		return
	}
	refs := u.GetOwnerReferences()
	if slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return o.UID == ref.UID }) {
		return
	}
	ours := *ref
	if slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return o.Controller != nil && *o.Controller }) {
		ours.Controller = nil
	}
	u.SetOwnerReferences(append(refs, ours))
}
