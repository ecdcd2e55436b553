package reconcile

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// AnnotationPrune set to "disabled" on a member keeps it from ever being pruned.
	AnnotationPrune = "stencil.dev/prune"
)

// ApplySetID computes the id of the ApplySet whose parent is the named
// object, with kubectl's formula:
// applyset-<base64url(sha256(name.namespace.kind.group))>-v1.
func ApplySetID(name, namespace string, gk schema.GroupKind) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{name, namespace, gk.Kind, gk.Group}, ".")))
	return "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
}

// inventory is what a parent's annotations record: the group-kinds and the
// namespaces where members may be. It is a superset of the members during an
// apply and exact after a successful prune.
type inventory struct {
	groupKinds []schema.GroupKind // sorted by formatGroupKind
	namespaces []string           // sorted, without the parent's namespace
}

// formatGroupKind writes a group-kind as kubectl does: Kind.group, or Kind
// alone for the core group.
func formatGroupKind(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// parseInventory reads a parent's annotations.
func parseInventory(annotations map[string]string) inventory {
	var inv inventory
	for _, s := range splitList(annotations[AnnotationGroupKinds]) {
		inv.groupKinds = append(inv.groupKinds, schema.ParseGroupKind(s))
	}
	inv.namespaces = splitList(annotations[AnnotationNamespaces])
	return inv.normalize("")
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

// union returns the inventory holding both.
func (inv inventory) union(other inventory) inventory {
	return inventory{
		groupKinds: append(slices.Clone(inv.groupKinds), other.groupKinds...),
		namespaces: append(slices.Clone(inv.namespaces), other.namespaces...),
	}.normalize("")
}

// normalize sorts and deduplicates, and drops the parent's own namespace.
func (inv inventory) normalize(parentNamespace string) inventory {
	slices.SortFunc(inv.groupKinds, func(a, b schema.GroupKind) int {
		return strings.Compare(formatGroupKind(a), formatGroupKind(b))
	})
	inv.groupKinds = slices.Compact(inv.groupKinds)
	inv.namespaces = slices.DeleteFunc(slices.Clone(inv.namespaces), func(ns string) bool {
		return ns == "" || ns == parentNamespace
	})
	slices.Sort(inv.namespaces)
	inv.namespaces = slices.Compact(inv.namespaces)
	return inv
}

// annotations renders the inventory as the parent's annotation values.
func (inv inventory) annotations() (groupKinds, namespaces string) {
	gks := make([]string, len(inv.groupKinds))
	for i, gk := range inv.groupKinds {
		gks[i] = formatGroupKind(gk)
	}
	return strings.Join(gks, ","), strings.Join(inv.namespaces, ",")
}

// RecordsMembers reports whether a parent's annotations record members
// (an ApplySet that was installed): .Release.IsUpgrade.
func RecordsMembers(annotations map[string]string) bool {
	return installed(parseInventory(annotations))
}
