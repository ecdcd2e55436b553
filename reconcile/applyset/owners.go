package applyset

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Owner references: a planned member in its parent's namespace carries
// the parent's owner reference (package plan), applied by server-side
// apply like any field stencil sets. ownerReferences is a list map keyed
// by uid, so stencil's entry merges with other writers' entries and
// removing it from a render removes only it.

// settleOwners returns desired with the controller bit of each owner
// reference it carries settled against live, the object it is applied
// over (nil: none): an entry live already holds keeps live's bit and
// apiVersion (so a reference, once written, is never written again for
// it: not when another controller lets the member go, not when the
// parent's kind is served at a new version, which would rewrite every
// member of every instance; owners are found by uid, and any version of
// the kind names it), and an entry new to live claims to be the
// controller only when live names no other controller (Kubernetes allows
// one). desired itself is returned when nothing changes.
func settleOwners(desired, live *unstructured.Unstructured) *unstructured.Unstructured {
	refs := desired.GetOwnerReferences()
	if len(refs) == 0 || live == nil {
		return desired
	}
	have := live.GetOwnerReferences()
	changed := false
	for i, ref := range refs {
		want := ref.Controller
		if j := slices.IndexFunc(have, func(o metav1.OwnerReference) bool { return o.UID == ref.UID }); j >= 0 {
			want = have[j].Controller
			if v := have[j].APIVersion; v != ref.APIVersion && sameGroup(v, ref.APIVersion) && have[j].Kind == ref.Kind {
				refs[i].APIVersion, changed = v, true
			}
		} else if isController(ref) && slices.ContainsFunc(have, func(o metav1.OwnerReference) bool { return isController(o) }) {
			want = nil
		}
		if !sameBit(want, ref.Controller) {
			refs[i].Controller, changed = want, true
		}
	}
	if !changed {
		return desired
	}
	out := desired.DeepCopy()
	out.SetOwnerReferences(refs)
	return out
}

func isController(o metav1.OwnerReference) bool { return o.Controller != nil && *o.Controller }

// sameGroup reports whether two apiVersions are of one group.
func sameGroup(a, b string) bool {
	ga, errA := schema.ParseGroupVersion(a)
	gb, errB := schema.ParseGroupVersion(b)
	return errA == nil && errB == nil && ga.Group == gb.Group
}

func sameBit(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// withoutNewOwners returns desired without the owner references live
// lacks, and whether it carried any.
func withoutNewOwners(desired, live *unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	have := map[types.UID]bool{}
	for _, o := range live.GetOwnerReferences() {
		have[o.UID] = true
	}
	refs := desired.GetOwnerReferences()
	kept := slices.DeleteFunc(slices.Clone(refs), func(o metav1.OwnerReference) bool { return !have[o.UID] })
	if len(kept) == len(refs) {
		return desired, false
	}
	out := desired.DeepCopy()
	if len(kept) == 0 {
		unstructured.RemoveNestedField(out.Object, "metadata", "ownerReferences")
	} else {
		out.SetOwnerReferences(kept)
	}
	return out, true
}

// pace waits for a.Pace before a write whose only change is to add an
// owner reference live lacks: what an existing set meets once when the
// controller starts to write references (issue 41). Those writes, one per
// member and never repeated (the next pass finds the reference in place),
// are spread over time instead of arriving all at once; any other write
// goes at once.
func (a *Applier) pace(ctx context.Context, desired, live *unstructured.Unstructured) error {
	if a.Pace == nil {
		return nil
	}
	bare, adds := withoutNewOwners(desired, live)
	if !adds || a.Schemas.Decide(ctx, a.Writer, bare, live).Write {
		return nil
	}
	return a.Pace(ctx)
}
