package watch

import (
	"context"
	"slices"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Members lists the members of one kind in one namespace ("" for
// all) of set id from the cache, as a prune listing gives them
// (applyset.Pruner.Cached), when the kind's watch has synced.
func (w *Watcher) Members(ctx context.Context, gvk schema.GroupVersionKind, namespace, id string) ([]applyset.Member, bool) {
	list, ok := w.List(ctx, gvk, namespace, id)
	if !ok {
		return nil, false
	}
	out := make([]applyset.Member, 0, len(list.Items))
	for i := range list.Items {
		u := &list.Items[i]
		m := applyset.Member{GVK: gvk, Listed: true}
		m.Meta.SetGroupVersionKind(gvk)
		m.Meta.SetNamespace(u.GetNamespace())
		m.Meta.SetName(u.GetName())
		m.Meta.SetUID(u.GetUID())
		m.Meta.SetResourceVersion(u.GetResourceVersion())
		m.Meta.SetLabels(u.GetLabels())
		m.Meta.SetAnnotations(u.GetAnnotations())
		m.Meta.SetManagedFields(u.GetManagedFields())
		m.Meta.SetDeletionTimestamp(u.GetDeletionTimestamp())
		m.Meta.SetFinalizers(u.GetFinalizers())
		out = append(out, m)
	}
	return out, true
}

// ListLive lists from the cache every object carrying the part-of label of
// set id
// of the planned members' kinds, in their namespaces. ok is false
// when a kind's watch has not synced (its members would have to be read
// from the API server) or a list fails: the full pass handles those. The
// objects are the cache's own (see List): read them only.
func (w *Watcher) ListLive(ctx context.Context, id string, planned []recall.MemberKey) (map[recall.MemberKey]*unstructured.Unstructured, bool) {
	type kindIn struct {
		gvk       schema.GroupVersionKind
		namespace string
	}
	var lists []kindIn
	for _, k := range planned {
		if l := (kindIn{k.GVK, k.Namespace}); !slices.Contains(lists, l) {
			lists = append(lists, l)
		}
	}
	live := map[recall.MemberKey]*unstructured.Unstructured{}
	for _, l := range lists {
		list, ok := w.List(ctx, l.gvk, l.namespace, id)
		if !ok {
			return nil, false
		}
		for i := range list.Items {
			u := &list.Items[i]
			live[recall.MemberKey{GVK: l.gvk, Namespace: u.GetNamespace(), Name: u.GetName()}] = u
		}
	}
	return live, true
}
