package reconcile

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Events about a member are recorded on the Composition (regarding) with
// the member as the related object. The events.k8s.io recorder folds events
// with the same regarding, related, type, reason and action into one series
// whatever their notes say, so without the related member the Created,
// Configured, Pruned, Deleted and Orphaned events of several members of one
// pass would collapse into one.

// memberObject is a reference to a member, for the related object of an event.
func memberObject(gvk schema.GroupVersionKind, namespace, name string, uid types.UID) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}
	o.SetGroupVersionKind(gvk)
	return o
}

// object is the member as the related object of an event.
func (m member) object() *metav1.PartialObjectMetadata {
	return memberObject(m.gvk, m.meta.Namespace, m.meta.Name, m.meta.UID)
}

// object is the applied object as the related object of an event.
func (r ApplyResult) object() *metav1.PartialObjectMetadata {
	return memberObject(r.Object.GroupVersionKind(), r.Object.GetNamespace(), r.Object.GetName(), r.UID)
}
