package applyset

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Pruner finds and deletes the members of an ApplySet. Listing goes to the
// API server (lister), or, for the kinds cached says it holds, to the
// label-selected member cache (see cachedPruner for why that is safe);
// deleting goes through writer, which impersonates the Composition's
// ServiceAccount when it has one.
type Pruner struct {
	Lister client.Reader
	Writer client.Client
	Mapper meta.RESTMapper
	ID     string
	// Cached, when set, lists the members of a kind from the cache and
	// reports whether it could; nil lists everything live.
	Cached func(ctx context.Context, gvk schema.GroupVersionKind, namespace string, id string) ([]Member, bool)
}

// Member is one live object found by its part-of label.
type Member struct {
	GVK  schema.GroupVersionKind
	Meta metav1.PartialObjectMetadata
	// Listed: listed from the cache, so deleted only at the
	// resourceVersion listed (see deleteMember).
	Listed bool
}

// ListResult is what listing a recorded Inventory found.
type ListResult struct {
	Members []Member
	// Unlisted are the group-kinds that could not be listed (discovery or
	// list failed): they stay recorded, and nothing of them is pruned.
	Unlisted []schema.GroupKind
	// Gone are the group-kinds the API server no longer serves (their CRD
	// was deleted): nothing of them can exist, so they are dropped.
	Gone []schema.GroupKind
	// Forbidden are the group-kinds the controller may not list (in the
	// namespace named): also in unlisted.
	Forbidden []KindIn
}

// KindIn is a group-kind in a namespace ("" for cluster-wide).
type KindIn struct {
	GK        schema.GroupKind
	Namespace string
}

// List finds every live object labelled as a member of the set, over the
// recorded group-kinds and namespaces.
func (p *Pruner) List(ctx context.Context, inv Inventory, parentNamespace string) ListResult {
	var res ListResult
	namespaces := append([]string{parentNamespace}, inv.Namespaces...)
	for _, gk := range inv.GroupKinds {
		mapping, err := p.Mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			res.Gone = append(res.Gone, gk)
			continue
		}
		if err != nil {
			res.Unlisted = append(res.Unlisted, gk)
			continue
		}
		scopes := namespaces
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			scopes = []string{""}
		}
		for _, ns := range scopes {
			if p.Cached != nil {
				if members, ok := p.Cached(ctx, mapping.GroupVersionKind, ns, p.ID); ok {
					res.Members = append(res.Members, members...)
					continue
				}
			}
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(mapping.GroupVersionKind.Kind + "List"))
			err := p.Lister.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelPartOf: p.ID})
			if err != nil {
				switch {
				case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
					res.Gone = append(res.Gone, gk)
				case apierrors.IsForbidden(err):
					res.Forbidden = append(res.Forbidden, KindIn{gk, ns})
					res.Unlisted = append(res.Unlisted, gk)
				default:
					res.Unlisted = append(res.Unlisted, gk)
				}
				break
			}
			for _, item := range list.Items {
				res.Members = append(res.Members, Member{GVK: mapping.GroupVersionKind, Meta: item})
			}
		}
	}
	res.Unlisted = slices.Compact(res.Unlisted)
	return res
}

// Prunable reports whether a listed member of set id, whose record is
// rec, may be deleted: not just applied, not already going, and owned.
func Prunable(m Member, keep map[types.UID]bool, id string, rec *Record) bool {
	return !keep[m.Meta.UID] && m.Meta.DeletionTimestamp == nil && Owned(m, id, rec)
}

// Owned reports whether stencil may delete, or orphan, a listed member of
// set id, whose record is rec, at all: the ownership test (Owns) finds it
// Ours (labelled part of the set and recorded: a label anyone who may
// patch the object can write, or another controller may have copied onto
// its own object), and it is not opted out with stencil.dev/prune:
// disabled. Nothing is ever adopted by a delete.
func Owned(m Member, id string, rec *Record) bool {
	return m.Meta.Annotations[AnnotationPrune] != "disabled" &&
		Owns(&m.Meta, m.GVK.GroupKind(), id, rec, Consent{}) == Ours
}

// DeleteMember deletes one member with a UID precondition, so an object
// recreated under the same name since it was listed is never deleted, and
// for a member listed from the cache a resourceVersion one too. A 404
// (already gone) is success; a 409 (replaced) reports conflict so the caller
// keeps its group-kind recorded and retries on the next pass.
func (p *Pruner) DeleteMember(ctx context.Context, m Member) (conflict bool, err error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(m.GVK)
	obj.SetNamespace(m.Meta.Namespace)
	obj.SetName(m.Meta.Name)
	pre := client.Preconditions{UID: &m.Meta.UID}
	if m.Listed {
		version := m.Meta.ResourceVersion
		pre.ResourceVersion = &version
	}
	err = p.Writer.Delete(ctx, obj, pre, client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsConflict(err):
		return true, nil
	default:
		return false, fmt.Errorf("delete %s %s/%s: %w", m.GVK.Kind, m.Meta.Namespace, m.Meta.Name, err)
	}
}

// Ref names a member as Kind/namespace/name.
func (m Member) Ref() string {
	if m.Meta.Namespace == "" {
		return m.GVK.Kind + "/" + m.Meta.Name
	}
	return m.GVK.Kind + "/" + m.Meta.Namespace + "/" + m.Meta.Name
}

// Related is the member as the related object of an event.
func (m Member) Related() *metav1.PartialObjectMetadata {
	return RelatedObject(m.GVK, m.Meta.Namespace, m.Meta.Name, m.Meta.UID)
}
