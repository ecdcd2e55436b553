package reconcile

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pruner finds and deletes the members of an ApplySet. Listing goes to the
// API server (lister), never to a cache that may lag; deleting goes through
// writer, which impersonates the Composition's ServiceAccount when it has one.
type pruner struct {
	lister client.Reader
	writer client.Client
	mapper meta.RESTMapper
	id     string
}

// member is one live object found by its part-of label.
type member struct {
	gvk  schema.GroupVersionKind
	meta metav1.PartialObjectMetadata
}

// listResult is what listing a recorded inventory found.
type listResult struct {
	members []member
	// unlisted are the group-kinds that could not be listed (discovery or
	// list failed): they stay recorded, and nothing of them is pruned.
	unlisted []schema.GroupKind
	// gone are the group-kinds the API server no longer serves (their CRD
	// was deleted): nothing of them can exist, so they are dropped.
	gone []schema.GroupKind
}

// list finds every live object labelled as a member of the set, over the
// recorded group-kinds and namespaces.
func (p *pruner) list(ctx context.Context, inv inventory, parentNamespace string) listResult {
	var res listResult
	namespaces := append([]string{parentNamespace}, inv.namespaces...)
	for _, gk := range inv.groupKinds {
		mapping, err := p.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			res.gone = append(res.gone, gk)
			continue
		}
		if err != nil {
			res.unlisted = append(res.unlisted, gk)
			continue
		}
		scopes := namespaces
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			scopes = []string{""}
		}
		for _, ns := range scopes {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(mapping.GroupVersionKind.Kind + "List"))
			err := p.lister.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelPartOf: p.id})
			if err != nil {
				if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
					res.gone = append(res.gone, gk)
				} else {
					res.unlisted = append(res.unlisted, gk)
				}
				break
			}
			for _, item := range list.Items {
				res.members = append(res.members, member{gvk: mapping.GroupVersionKind, meta: item})
			}
		}
	}
	res.unlisted = slices.Compact(res.unlisted)
	return res
}

// prunable reports whether a listed member may be deleted: not just applied,
// not already going, and owned.
func prunable(m member, keep map[types.UID]bool) bool {
	return !keep[m.meta.UID] && m.meta.DeletionTimestamp == nil && owned(m)
}

// owned reports whether stencil may delete a member at all: it is managed
// by stencil's field manager (another controller may have copied our label
// onto its own object) and not opted out with stencil.dev/prune: disabled.
func owned(m member) bool {
	return m.meta.Annotations[AnnotationPrune] != "disabled" &&
		slices.ContainsFunc(m.meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool {
			return f.Manager == FieldManager
		})
}

// deleteMember deletes one member with a UID precondition, so an object
// recreated under the same name since it was listed is never deleted. A 404
// (already gone) is success; a 409 (replaced) reports conflict so the caller
// keeps its group-kind recorded and retries on the next pass.
func (p *pruner) deleteMember(ctx context.Context, m member) (conflict bool, err error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.gvk)
	obj.SetNamespace(m.meta.Namespace)
	obj.SetName(m.meta.Name)
	err = p.writer.Delete(ctx, obj, client.Preconditions{UID: &m.meta.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil
	default:
		return false, fmt.Errorf("delete %s %s/%s: %w", m.gvk.Kind, m.meta.Namespace, m.meta.Name, err)
	}
}

// memberRef names a member as Kind/namespace/name.
func (m member) ref() string {
	if m.meta.Namespace == "" {
		return m.gvk.Kind + "/" + m.meta.Name
	}
	return m.gvk.Kind + "/" + m.meta.Namespace + "/" + m.meta.Name
}
