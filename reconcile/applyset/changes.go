package applyset

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/applyset/nochange"
)

// CleanForDiff returns a copy of u without what the server keeps for
// itself, which a comparison would only show as noise: managedFields,
// resourceVersion, generation, uid and creationTimestamp (a dry-run
// create invents the last three). `stencil diff` and the admission
// webhook's dry-run summary compare cleaned objects.
func CleanForDiff(u *unstructured.Unstructured) *unstructured.Unstructured {
	u = u.DeepCopy()
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	return u
}

// FieldChange is one changed field of an object, found by ChangedFields.
type FieldChange struct {
	// Path names the field: spec.replicas, metadata.labels[app.kubernetes.io/name],
	// spec.template.spec.containers[name=web].image.
	Path string
	// Old and New are the field's values; nil when it was added (Old) or
	// removed (New). Only scalars are kept: a map or a list is nil.
	Old, New any
	// Added and Removed tell a field that appears or goes.
	Added, Removed bool
	// Hidden withholds the values: a Secret's data.
	Hidden bool
}

// String prints the change: "spec.replicas 2 → 3", "spec.paused (none) →
// true", "spec.volumes removed", "data.password changed".
func (c FieldChange) String() string {
	switch {
	case c.Hidden && c.Added:
		return c.Path + " added"
	case c.Hidden && c.Removed:
		return c.Path + " removed"
	case c.Hidden, !c.Added && !c.Removed && c.Old == nil && c.New == nil:
		return c.Path + " changed"
	case c.Added && c.New == nil:
		return c.Path + " added"
	case c.Removed && c.Old == nil:
		return c.Path + " removed"
	}
	return c.Path + " " + scalarText(c.Old, c.Added) + " → " + scalarText(c.New, c.Removed)
}

// maxScalarRunes bounds a value printed in a change.
const maxScalarRunes = 40

// scalarText prints a scalar as JSON ("(none)" when absent), cut to maxScalarRunes.
func scalarText(v any, absent bool) string {
	if absent {
		return "(none)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if r := []rune(string(data)); len(r) > maxScalarRunes {
		return string(r[:maxScalarRunes-1]) + "…"
	}
	return string(data)
}

// ChangedFields lists the fields that differ between live and applied
// (the object after a dry-run apply), both cleaned of server bookkeeping
// (CleanForDiff), status, and the copy kubectl's client-side apply keeps
// in an annotation. Lists of maps that all have a distinct name are
// compared by name (containers[name=web].image), other lists of the same
// length item by item, and others as a whole. The values of a Secret's
// data and stringData are masked before the comparison (MaskSecretData)
// and their changes Hidden. The changes are sorted by path.
func ChangedFields(live, applied *unstructured.Unstructured) []FieldChange {
	a, b := cleanForSummary(live), cleanForSummary(applied)
	secret := MaskSecretData(a, b)
	var d fieldDiff
	d.values("", a.Object, b.Object)
	if secret {
		for i := range d.out {
			if isSecretPath(d.out[i].Path) {
				d.out[i].Old, d.out[i].New, d.out[i].Hidden = nil, nil, true
			}
		}
	}
	sort.SliceStable(d.out, func(i, j int) bool { return d.out[i].Path < d.out[j].Path })
	return d.out
}

// cleanForSummary is CleanForDiff without status and the last-applied
// annotation (which may hold a Secret's data).
func cleanForSummary(u *unstructured.Unstructured) *unstructured.Unstructured {
	u = CleanForDiff(u)
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")
	if a, ok, _ := unstructured.NestedMap(u.Object, "metadata", "annotations"); ok && len(a) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
	}
	return u
}

// fieldDiff walks two values of an object, a before and b after, and
// collects where they differ. It is the one field walker: ChangedFields
// (values, for diffs and warnings) and changedFields (paths, for an apply
// the local decision could not compare) are two views of its changes.
type fieldDiff struct {
	// apply compares as an apply of b over a: only the fields b sets
	// count (a field only a holds stays, the server's or another
	// manager's), and scalars are equal by value (2 and 2.0, "0.5" and
	// "500m"), as the server would store them.
	apply bool
	out   []FieldChange
}

// values appends the changes from a to b under path.
func (d *fieldDiff) values(path string, a, b any) {
	switch {
	case reflect.DeepEqual(a, b):
		return
	case a == nil:
		d.out = append(d.out, FieldChange{Path: path, New: scalarOnly(b), Added: true})
		return
	case b == nil:
		d.out = append(d.out, FieldChange{Path: path, Old: scalarOnly(a), Removed: true})
		return
	}
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		for _, k := range d.keys(am, bm) {
			d.values(joinPath(path, k), am[k], bm[k])
		}
		return
	}
	al, aIsList := a.([]any)
	bl, bIsList := b.([]any)
	if aIsList && bIsList {
		d.lists(path, al, bl)
		return
	}
	if d.apply && scalarOnly(a) != nil && scalarOnly(b) != nil && scalarEqual(a, b) {
		return
	}
	d.out = append(d.out, FieldChange{Path: path, Old: scalarOnly(a), New: scalarOnly(b)})
}

// lists compares lists by item name when every item of both is a map
// with a distinct name, else item by item when they are as long, else as
// a whole.
func (d *fieldDiff) lists(path string, a, b []any) {
	an, aNamed := byName(a)
	bn, bNamed := byName(b)
	switch {
	case aNamed && bNamed:
		for _, k := range d.keys(an, bn) {
			d.values(path+"[name="+k+"]", an[k], bn[k])
		}
	case len(a) == len(b):
		for i := range a {
			d.values(fmt.Sprintf("%s[%d]", path, i), a[i], b[i])
		}
	default:
		d.out = append(d.out, FieldChange{Path: path})
	}
}

// keys are the keys to compare of two maps: both's, or b's only for an
// apply.
func (d *fieldDiff) keys(a, b map[string]any) []string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	if !d.apply {
		for k := range a {
			if _, ok := b[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// byName indexes a list of maps by their distinct "name" field.
func byName(l []any) (map[string]any, bool) {
	out := make(map[string]any, len(l))
	for _, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		name, ok := m["name"].(string)
		if !ok || out[name] != nil {
			return nil, false
		}
		out[name] = m
	}
	return out, true
}

// joinPath appends a map key to a field path; a key with a dot or a
// slash (a label, an annotation, a ConfigMap's file) is bracketed.
func joinPath(path, key string) string {
	switch {
	case strings.ContainsAny(key, "./[]"):
		return path + "[" + key + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// scalarOnly returns v when it is a scalar, else nil.
func scalarOnly(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return nil
	}
	return v
}

// isKind reports whether u is of group and kind.
func isKind(u *unstructured.Unstructured, group, kind string) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == group && gvk.Kind == kind
}

// maxChangedFields bounds the field paths one apply result reports.
const maxChangedFields = nochange.MaxChanged

// changedFields lists the paths of at most max fields, sorted, that an
// apply of desired over live changes: fields desired sets that live does
// not hold with an equal value (fieldDiff's apply comparison). It names
// an apply's fields when the local decision could not compare them (no
// schema for the kind, say). Paths name fields, never values.
func changedFields(desired, live any, max int) []string {
	d := fieldDiff{apply: true}
	d.values("", live, desired)
	var out []string
	for _, c := range d.out {
		out = append(out, c.Path)
	}
	sort.Strings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// scalarEqual reports whether two scalars of an unstructured object hold
// the same value: numbers by value, quantities by amount. It serves
// changedFields, which names the fields of an apply when the local apply
// could not be computed.
func scalarEqual(a, b any) bool {
	if a == b {
		return true
	}
	af, aok := nochange.Number(a)
	bf, bok := nochange.Number(b)
	if aok && bok {
		return af == bf
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		qa, errA := resource.ParseQuantity(as)
		qb, errB := resource.ParseQuantity(bs)
		return errA == nil && errB == nil && qa.Cmp(qb) == 0
	}
	return false
}
