package applyset

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// ApplySet labels and annotations, as kubectl implements KEP-3659.
const (
	// LabelApplySetID is the parent's label holding the set's id.
	LabelApplySetID = "applyset.kubernetes.io/id"
	// LabelPartOf is every member's label naming its set's id.
	LabelPartOf = "applyset.kubernetes.io/part-of"
	// AnnotationTooling names the tool that manages the set, as name/version.
	AnnotationTooling = "applyset.kubernetes.io/tooling"
	// AnnotationGroupKinds lists the group-kinds the set's members may have.
	AnnotationGroupKinds = "applyset.kubernetes.io/contains-group-kinds"
	// AnnotationNamespaces lists the namespaces, other than the parent's, that members may be in.
	AnnotationNamespaces = "applyset.kubernetes.io/additional-namespaces"
	// annotationNamespacesMisspelled is the key stencil wrote instead of
	// AnnotationNamespaces for a while (a rename gone wrong): still read,
	// so that the members it names stay findable, and replaced by the next
	// write of the metadata (see NeedsRewrite).
	annotationNamespacesMisspelled = "applyset.kubernetes.io/additional-Namespaces"
	// AnnotationPrune set to "disabled" on a member keeps it from ever being pruned.
	AnnotationPrune = "stencil.dev/prune"
)

// ID computes the id of the ApplySet whose parent is the named
// object, with kubectl's formula:
// applyset-<base64url(sha256(name.namespace.kind.group))>-v1.
func ID(name, namespace string, gk schema.GroupKind) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, gk.Kind, gk.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// Inventory is what a parent's annotations record: the group-kinds and the
// Namespaces where members may be. It is a superset of the members during an
// apply and exact after a successful prune.
type Inventory struct {
	GroupKinds []schema.GroupKind // sorted by FormatGroupKind
	Namespaces []string           // sorted, without the parent's namespace
}

// FormatGroupKind writes a group-kind as kubectl does: Kind.group, or Kind
// alone for the core group.
func FormatGroupKind(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// ParseInventory reads a parent's annotations.
func ParseInventory(annotations map[string]string) Inventory {
	var inv Inventory
	for _, s := range splitList(annotations[AnnotationGroupKinds]) {
		inv.GroupKinds = append(inv.GroupKinds, schema.ParseGroupKind(s))
	}
	inv.Namespaces = splitList(annotations[AnnotationNamespaces])
	inv.Namespaces = append(inv.Namespaces, splitList(annotations[annotationNamespacesMisspelled])...)
	return inv.Normalize("")
}

// NeedsRewrite reports whether a parent's ApplySet annotations must be
// written again whatever they name: they lack the namespaces annotation
// (kubectl reads it, empty or not), or carry the misspelled key an
// earlier stencil wrote.
func NeedsRewrite(annotations map[string]string) bool {
	_, ok := annotations[AnnotationNamespaces]
	_, misspelled := annotations[annotationNamespacesMisspelled]
	return !ok || misspelled
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// union returns the Inventory holding both.
func (inv Inventory) Union(other Inventory) Inventory {
	return Inventory{
		GroupKinds: append(slices.Clone(inv.GroupKinds), other.GroupKinds...),
		Namespaces: append(slices.Clone(inv.Namespaces), other.Namespaces...),
	}.Normalize("")
}

// normalize sorts and deduplicates, and drops the parent's own namespace.
func (inv Inventory) Normalize(parentNamespace string) Inventory {
	slices.SortFunc(inv.GroupKinds, func(a, b schema.GroupKind) int {
		return strings.Compare(FormatGroupKind(a), FormatGroupKind(b))
	})
	inv.GroupKinds = slices.Compact(inv.GroupKinds)
	inv.Namespaces = slices.DeleteFunc(slices.Clone(inv.Namespaces), func(ns string) bool {
		return ns == "" || ns == parentNamespace
	})
	slices.Sort(inv.Namespaces)
	inv.Namespaces = slices.Compact(inv.Namespaces)
	return inv
}

// annotations renders the Inventory as the parent's annotation values.
func (inv Inventory) Annotations() (GroupKinds, namespaces string) {
	gks := make([]string, len(inv.GroupKinds))
	for i, gk := range inv.GroupKinds {
		gks[i] = FormatGroupKind(gk)
	}
	return strings.Join(gks, ","), strings.Join(inv.Namespaces, ",")
}

// CompositionGroupKind is the group-kind of the Composition, the generic parent.
var CompositionGroupKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "Composition"}

// Ref names an object as Kind/namespace/name (Kind/name when cluster-scoped).
func Ref(u client.Object) string {
	kind := u.GetObjectKind().GroupVersionKind().Kind
	if u.GetNamespace() == "" {
		return kind + "/" + u.GetName()
	}
	return kind + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Intersect returns the group-kinds and namespaces both inv and other hold.
func (inv Inventory) Intersect(other Inventory) Inventory {
	var out Inventory
	for _, gk := range inv.GroupKinds {
		if slices.Contains(other.GroupKinds, gk) {
			out.GroupKinds = append(out.GroupKinds, gk)
		}
	}
	for _, ns := range inv.Namespaces {
		if slices.Contains(other.Namespaces, ns) {
			out.Namespaces = append(out.Namespaces, ns)
		}
	}
	return out.Normalize("")
}

// Minus returns what inv holds and other does not.
func (inv Inventory) Minus(other Inventory) Inventory {
	var out Inventory
	for _, gk := range inv.GroupKinds {
		if !slices.Contains(other.GroupKinds, gk) {
			out.GroupKinds = append(out.GroupKinds, gk)
		}
	}
	for _, ns := range inv.Namespaces {
		if !slices.Contains(other.Namespaces, ns) {
			out.Namespaces = append(out.Namespaces, ns)
		}
	}
	return out
}

// Empty reports whether inv names no group-kind and no namespace.
func (inv Inventory) Empty() bool { return len(inv.GroupKinds) == 0 && len(inv.Namespaces) == 0 }

// Status is inv as the parent's status records it (status.inventory).
func (inv Inventory) Status() *v1alpha1.InventoryStatus {
	out := &v1alpha1.InventoryStatus{}
	for _, gk := range inv.GroupKinds {
		out.GroupKinds = append(out.GroupKinds, FormatGroupKind(gk))
	}
	if len(inv.Namespaces) > 0 {
		out.Namespaces = slices.Clone(inv.Namespaces)
	}
	return out
}

// Recorded returns the Inventory that prune and deletion act on for parent
// p, and that says whether its set is installed (.Release.IsUpgrade): the
// controller's own record, status.inventory (only the controller writes a
// parent's status: stencil's admission policy refuses anyone else). The
// ApplySet annotations, which whoever may update the parent may edit
// unchecked (the policy lets the controller write them during a
// deletion), are a copy of it for kubectl, never proof: an entry added by
// hand is ignored (never listed, pruned or deleted from), and one removed
// by hand narrows nothing; the next write of the metadata puts them back.
// ignored is what the annotations name beyond the record.
//
// A parent with no record is either one an earlier version of stencil
// reconciled (its status has conditions or an observedGeneration, which
// only the controller writes): its annotations are taken as they are, the
// behaviour of that version, until the pass records them (each status
// write carries a record); or one never reconciled: its record is empty,
// whatever its annotations say.
func Recorded(p Parent) (inv, ignored Inventory) {
	annotated := ParseInventory(p.GetAnnotations()).Normalize(p.GetNamespace())
	st := p.ParentStatus()
	if st.Inventory == nil {
		if st.ObservedGeneration > 0 || len(st.Conditions) > 0 {
			return annotated, Inventory{}
		}
		return Inventory{}, annotated
	}
	record := Inventory{Namespaces: slices.Clone(st.Inventory.Namespaces)}
	for _, s := range st.Inventory.GroupKinds {
		record.GroupKinds = append(record.GroupKinds, schema.ParseGroupKind(s))
	}
	record = record.Normalize(p.GetNamespace())
	return record, annotated.Minus(record)
}

// Mirrors reports whether p's ApplySet annotations name exactly what its
// record does (see Recorded) and need no rewrite (NeedsRewrite).
func Mirrors(p Parent) bool {
	inv, _ := Recorded(p)
	gks, nss := inv.Annotations()
	annotated := ParseInventory(p.GetAnnotations()).Normalize(p.GetNamespace())
	agks, anss := annotated.Annotations()
	return gks == agks && nss == anss && !NeedsRewrite(p.GetAnnotations())
}
