package applyset

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// AnnotationAdopt, on an existing object, consents to its adoption by the
// parent its value names, as <resource>.<group>/<namespace>/<name>: the
// form of kubectl's --applyset flag (<resource>.<group>/<name>) with the
// parent's namespace before its name, such as
// compositions.stencil.dev/team-a/web, or appservices.example.com/team-a/web
// for an instance of a published kind. It is the object's own say, as
// Helm's meta.helm.sh/release-name and release-namespace annotations are
// for a release: whoever may write the object may give it.
const AnnotationAdopt = "stencil.dev/adopt"

// Ownership is what an existing object is to an ApplySet (see Owns).
type Ownership int

const (
	// NotOurs: the object is not a member of this set and nothing
	// consents to its adoption (no part-of label, or this set's label on
	// an object stencil's field manager does not manage: another tool
	// copied it). It is never written, labelled or deleted.
	NotOurs Ownership = iota
	// Ours: the object is labelled part of this set and managed by
	// stencil's field manager. It may be applied over, pruned, orphaned
	// and deleted.
	Ours
	// Adoptable: the object belongs to no set and consents to joining
	// this one (see Consent). It may be applied over with forced
	// ownership, which labels it a member.
	Adoptable
	// Foreign: the object is labelled part of another ApplySet. It is
	// never taken over.
	Foreign
)

func (o Ownership) String() string {
	switch o {
	case Ours:
		return "Ours"
	case Adoptable:
		return "Adoptable"
	case Foreign:
		return "Foreign"
	}
	return "NotOurs"
}

// Consent is what lets a set adopt an existing object of no set: the
// object's stencil.dev/adopt annotation naming Parent, or the Bundle's
// spec.permissions.adopt naming its kind.
type Consent struct {
	// Parent names the set's parent as AnnotationAdopt does (see AdoptValue);
	// "" accepts no annotation.
	Parent string
	// Kinds are the Bundle's spec.permissions.adopt.
	Kinds []v1alpha1.GroupKind
}

// ConsentOf is the consent of parent p, whose kind the API server serves
// as resource (its plural), for a Bundle whose spec.permissions.adopt is
// kinds.
func ConsentOf(p Parent, resource string, kinds []v1alpha1.GroupKind) Consent {
	c := Consent{Kinds: kinds}
	if resource != "" {
		c.Parent = AdoptValue(p, resource)
	}
	return c
}

// AdoptValue is the value of AnnotationAdopt that names parent p, whose
// kind is served as resource (its plural, such as "compositions").
func AdoptValue(p Parent, resource string) string {
	gr := resource
	if g := p.ParentGVK().Group; g != "" {
		gr += "." + g
	}
	return gr + "/" + p.GetNamespace() + "/" + p.GetName()
}

// Owns is the one ownership test: what the live object live, of kind gk,
// is to the ApplySet id, given consent. Every write over an existing
// object (apply, hooks), every delete (prune, hooks, finalize) and every
// orphaning asks it first, on the object as last read:
//
//   - labelled part of id and managed by stencil's FieldManager: Ours;
//   - labelled part of another set: Foreign;
//   - labelled part of no set, with consent (its stencil.dev/adopt
//     annotation is consent.Parent, or consent.Kinds allows gk): Adoptable;
//   - anything else: NotOurs.
func Owns(live metav1.Object, gk schema.GroupKind, id string, consent Consent) Ownership {
	switch set := live.GetLabels()[LabelPartOf]; {
	case set == id && id != "":
		if slices.ContainsFunc(live.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager }) {
			return Ours
		}
		return NotOurs
	case set != "":
		return Foreign
	}
	if v := live.GetAnnotations()[AnnotationAdopt]; v != "" && v == consent.Parent {
		return Adoptable
	}
	if slices.ContainsFunc(consent.Kinds, func(k v1alpha1.GroupKind) bool {
		return k.Group == gk.Group && (k.Kind == gk.Kind || k.Kind == "*")
	}) {
		return Adoptable
	}
	return NotOurs
}

// AdoptionRefusedError reports an existing object the set may not take:
// not a member, and nothing consents to its adoption. It names the object,
// never its content.
type AdoptionRefusedError struct {
	// Object names the object as Kind/namespace/name.
	Object string
	// Parent is the value of AnnotationAdopt that would consent.
	Parent string
}

func (e *AdoptionRefusedError) Error() string {
	msg := fmt.Sprintf("%s exists and is not a member of this ApplySet: refusing to adopt it", e.Object)
	if e.Parent != "" {
		msg += fmt.Sprintf(" (to let it be adopted, annotate it %s: %s, or allow its kind in the Bundle's spec.permissions.adopt)", AnnotationAdopt, e.Parent)
	}
	return msg
}
