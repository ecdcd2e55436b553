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
	// consents to its adoption: it carries no part-of label, or this
	// set's label on an object the set's Record does not name (another
	// tool copied it, someone who may patch the object wrote it, or a
	// crash lost the record of its creation). It is never written,
	// labelled or deleted.
	NotOurs Ownership = iota
	// Ours: the object is labelled part of this set and the set's Record
	// names its UID. It may be applied over, pruned, orphaned and
	// deleted.
	Ours
	// Adoptable: the object is no member of any set (or carries this
	// set's label without being recorded) and consents to joining this
	// one (see Consent). It may be applied over with forced ownership,
	// which labels it a member and records it.
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
// is to the ApplySet id whose record is rec, given consent. Every write
// over an existing object (apply, hooks), every delete (prune, hooks,
// finalize), every orphaning, every read of the set's generated values
// and every member a status reports asks it first, on the object as last
// read:
//
//   - labelled part of id and recorded in rec (its UID; on a legacy
//     record not seeded yet, see RecordOf, a field of FieldManager): Ours;
//   - labelled part of another set: Foreign;
//   - labelled part of no set, or of id without being recorded, with
//     consent (its stencil.dev/adopt annotation is consent.Parent, or
//     consent.Kinds allows gk): Adoptable;
//   - anything else: NotOurs.
//
// The label and the field managers are hints that find members; only the
// record, which the controller alone writes, proves one.
func Owns(live metav1.Object, gk schema.GroupKind, id string, rec *Record, consent Consent) Ownership {
	switch set := live.GetLabels()[LabelPartOf]; {
	case set == id && id != "" && rec.owns(live):
		return Ours
	case set != "" && set != id:
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

// Refusal is the error of an apply or a hook that Owns does not let take
// live, an object of set id's desired ref: a ForeignMemberError for
// another set's member, an AdoptionRefusedError otherwise.
func Refusal(ref string, live metav1.Object, id string, consent Consent) error {
	if set := live.GetLabels()[LabelPartOf]; set != "" && set != id {
		return &ForeignMemberError{Object: ref, ApplySet: set}
	}
	return &AdoptionRefusedError{Object: ref, Parent: consent.Parent, Unrecorded: id != "" && live.GetLabels()[LabelPartOf] == id}
}

// AdoptionRefusedError reports an existing object the set may not take:
// not a member, and nothing consents to its adoption. It names the object,
// never its content.
type AdoptionRefusedError struct {
	// Object names the object as Kind/namespace/name.
	Object string
	// Parent is the value of AnnotationAdopt that would consent.
	Parent string
	// Unrecorded: the object carries this set's part-of label, but the
	// set's record does not name it (see Record).
	Unrecorded bool
}

func (e *AdoptionRefusedError) Error() string {
	msg := fmt.Sprintf("%s exists and is not a member of this ApplySet: refusing to adopt it", e.Object)
	if e.Unrecorded {
		msg = fmt.Sprintf("%s carries this ApplySet's part-of label, but stencil never recorded it a member "+
			"(a label anyone who may patch it can write, or the record of its creation lost in a crash): refusing to adopt it", e.Object)
	}
	if e.Parent != "" {
		msg += fmt.Sprintf(" (to let it be adopted, annotate it %s: %s, or allow its kind in the Bundle's spec.permissions.adopt)", AnnotationAdopt, e.Parent)
	}
	return msg
}
