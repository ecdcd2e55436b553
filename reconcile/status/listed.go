package status

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// ListedMembers are the members of set id a listing found that its
// record rec names (a copy of the part-of label on an object the record
// does not name is no member), stores of generated values left out
// (stencil's own), as objects to report (Members), in apply order: what a
// suspended parent's status lists.
func ListedMembers(listed []applyset.Member, id string, rec *applyset.Record) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, 0, len(listed))
	for _, m := range listed {
		if applyset.Owns(&m.Meta, m.GVK.GroupKind(), id, rec, applyset.Consent{}) != applyset.Ours {
			continue // a copy of the label on an object the set's record does not name
		}
		if valuestore.IsStore(&m.Meta) {
			continue // stencil's own, not listed (package valuestore)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.GVK)
		u.SetNamespace(m.Meta.Namespace)
		u.SetName(m.Meta.Name)
		objs = append(objs, u)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		if d := plan.KindRank(a.GetKind()) - plan.KindRank(b.GetKind()); d != 0 {
			return d
		}
		return strings.Compare(applyset.Ref(a), applyset.Ref(b))
	})
	return objs
}
