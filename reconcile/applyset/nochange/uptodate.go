package nochange

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// decision is what a local server-side apply of a desired object onto its
// live object found.
type decision struct {
	// write is true when an apply would change the object or stencil's
	// field set, or when that could not be decided.
	write bool
	// changed names, as paths (never values), fields the apply would
	// change, at most MaxChanged.
	changed []string
	// why says, when write is true and changed is empty, what made the
	// apply necessary (for logs; never values).
	why string
	// confirm is set when the only differences are fields live holds and
	// the result lacks, with every field set unchanged: fields the API
	// server may default back in (a volumeClaimTemplate's volumeMode, say,
	// inside an atomic list the apply replaces). Only the server knows its
	// defaults, so a server-side dry-run settles it (see confirmer).
	confirm bool
	// key, when confirm is set, identifies what the server is asked: the
	// desired object and the live values at the fields that differ (the
	// rest of the object was compared locally).
	key verdictKey
	// authors are the other managers whose changes the apply undoes.
	authors []Author
}

// upToDate decides whether the apply of desired over live may be skipped.
// It computes locally what the API server would store after stencil's
// forced server-side apply (structured-merge-diff, through the same field
// manager the API server runs, typed by the kind's schema), normalises that
// result as the server does (see normalise), and skips the write only when
//
//  1. the result equals live, ignoring resourceVersion and managedFields
//     timestamps, and
//  2. every managed-field entry, stencil's in particular, would be
//     unchanged.
//
// Anything unexpected (no schema for the kind, a conversion error, managed
// fields the field manager cannot read) answers write: a skip that is
// wrong leaves drift, a write that is not needed costs one request.
//
// A "no write" decision is remembered (see decided) until the live
// resourceVersion or the desired object changes.
func (s *Schemas) upToDate(ctx context.Context, desired, live *unstructured.Unstructured) decision {
	if s == nil {
		return decision{write: true, why: "no schemas"}
	}
	key, keyed := decidedKeyOf(desired, live)
	if keyed && s.decided.unchanged(live.GetUID(), key) {
		return decision{}
	}
	d := s.decide(ctx, desired, live)
	if keyed && !d.write {
		s.decided.remember(live.GetUID(), key)
	}
	return d
}

// decide is upToDate without its memory.
func (s *Schemas) decide(ctx context.Context, desired, live *unstructured.Unstructured) decision {
	t, err := s.forKind(ctx, desired.GroupVersionKind())
	if err != nil {
		return decision{write: true, why: err.Error()}
	}
	recorded := live
	live = sameVersionManagers(live, desired.GetAPIVersion())
	applied, err := t.manager.Apply(live.DeepCopy(), applyBody(desired), s.fieldManager, true)
	if err != nil {
		// The error may quote a value of the object: keep it out of logs.
		return decision{write: true, why: "the local apply failed"}
	}
	result, ok := applied.(*unstructured.Unstructured)
	if !ok {
		return decision{write: true, why: fmt.Sprintf("local apply returned %T", applied)}
	}
	keepSystemFields(result, live)
	if t.statusReset {
		// The field filter keeps status out of the field sets; the
		// server's update strategy keeps its value.
		if st, ok := live.Object["status"]; ok {
			result.Object["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(result.Object, "status")
		}
	}
	got, want := result.DeepCopy(), live.DeepCopy()
	for _, u := range []*unstructured.Unstructured{got, want} {
		if normalise(s.scheme, u, t.builtin) != nil {
			return decision{write: true, why: "the result could not be normalised"}
		}
	}
	sameOwners := sameManagedFields(got.GetManagedFields(), want.GetManagedFields())
	for _, u := range []*unstructured.Unstructured{got, want} {
		u.SetManagedFields(nil)
		u.SetResourceVersion("")
	}
	liveTyped, cmp, err := compareTyped(t.converter, want, got)
	switch {
	case err != nil:
		return decision{write: true, why: "the result could not be typed"}
	case !cmp.IsSame():
		d := decision{write: true, changed: fieldPaths(cmp, MaxChanged), authors: authorsOf(recorded, cmp.Modified, s.fieldManager)}
		// live holds all of the result and more: server defaults, maybe.
		if sameOwners && contained(got.Object, want.Object) {
			d.key, d.confirm = keyOf(desired, liveTyped, cmp)
		}
		return d
	case !sameOwners:
		return decision{write: true, why: "managed fields would change"}
	}
	return decision{}
}

// sameVersionManagers returns live with only the managed-field entries
// recorded at apiVersion. Entries at another version of the kind (a
// manager that wrote through autoscaling/v1 an object stencil applies as
// autoscaling/v2) could only be converted by the API server. They can be
// left out: a skip needs the applied result to equal live value for
// value, and an apply that changes no value takes no field from another
// manager; stencil's own entry at another version is left out too, so its
// move to the new version counts as a change.
func sameVersionManagers(live *unstructured.Unstructured, apiVersion string) *unstructured.Unstructured {
	mf := live.GetManagedFields()
	keep := make([]metav1.ManagedFieldsEntry, 0, len(mf))
	for _, e := range mf {
		if e.APIVersion == apiVersion {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(mf) {
		return live
	}
	out := live.DeepCopy()
	out.SetManagedFields(keep)
	return out
}

// applyBody is desired as an apply request carries it: a fresh copy,
// without the fields an apply body may not or need not hold.
func applyBody(desired *unstructured.Unstructured) *unstructured.Unstructured {
	body := desired.DeepCopy()
	body.SetManagedFields(nil)
	body.SetResourceVersion("")
	unstructured.RemoveNestedField(body.Object, "metadata", "creationTimestamp")
	return body
}

// keepSystemFields copies from live the metadata the API server keeps on
// every update whatever the request says.
func keepSystemFields(result, live *unstructured.Unstructured) {
	for _, f := range []string{"uid", "creationTimestamp", "generation", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(live.Object, "metadata", f); ok {
			_ = unstructured.SetNestedField(result.Object, runtime.DeepCopyJSONValue(v), "metadata", f)
		} else {
			unstructured.RemoveNestedField(result.Object, "metadata", f)
		}
	}
}

// normalise turns u into the form the API server stores:
//
//   - a core/v1 Secret's stringData is folded into data (base64) and
//     dropped, as the server's conversion does;
//   - a built-in kind goes through its Go type, so values equal to their
//     field's zero value under omitempty (nodeSelector: {}, tolerations: [])
//     disappear and quantities take their canonical form ("0.5" becomes
//     "500m", cpu: 1 becomes "1").
func normalise(scheme *runtime.Scheme, u *unstructured.Unstructured, builtin bool) error {
	gvk := u.GroupVersionKind()
	if gvk.Group == "" && gvk.Kind == "Secret" {
		if err := foldStringData(u); err != nil {
			return err
		}
	}
	if !builtin {
		return nil
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("normalise %s: %w", gvk, err)
	}
	// The converter's errors may quote a value of the object: they are
	// not passed on.
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj) != nil {
		return fmt.Errorf("normalise %s: the object does not convert to its Go type", gvk)
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("normalise %s: the Go type does not convert back", gvk)
	}
	u.Object = out
	u.SetGroupVersionKind(gvk)
	return nil
}

// foldStringData moves a Secret's stringData into data, base64-encoded,
// the stringData value winning over a data value of the same key.
func foldStringData(u *unstructured.Unstructured) error {
	sd, ok := u.Object["stringData"]
	if !ok {
		return nil
	}
	delete(u.Object, "stringData")
	m, ok := sd.(map[string]any)
	if sd == nil || (ok && len(m) == 0) {
		return nil
	}
	if !ok {
		return errors.New("the Secret's stringData is not an object")
	}
	data, _ := u.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range m {
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("the Secret's stringData.%s is not a string", k)
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(str))
	}
	u.Object["data"] = data
	return nil
}

// sameManagedFields reports whether two managedFields lists record the
// same managers with the same field sets, timestamps aside.
func sameManagedFields(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	byKey := make(map[string]metav1.ManagedFieldsEntry, len(b))
	for _, e := range b {
		byKey[entryKey(e)] = e
	}
	for _, e := range a {
		o, ok := byKey[entryKey(e)]
		if !ok || e.FieldsType != o.FieldsType || !sameFieldSet(e.FieldsV1, o.FieldsV1) {
			return false
		}
	}
	return true
}

// entryKey identifies a managedFields entry.
func entryKey(e metav1.ManagedFieldsEntry) string {
	return e.Manager + "\x00" + string(e.Operation) + "\x00" + e.APIVersion + "\x00" + e.Subresource
}

func sameFieldSet(a, b *metav1.FieldsV1) bool {
	if a == nil || b == nil {
		return a == b
	}
	var sa, sb fieldpath.Set
	if sa.FromJSON(a.GetRawReader()) != nil || sb.FromJSON(b.GetRawReader()) != nil {
		return false
	}
	return sa.Equals(&sb)
}

// compareTyped compares two objects of one kind field by field, lists and
// maps by their schema (atomic, set, or map by key).
// It returns from, typed, with the comparison. The typing errors may
// quote a value of the object: they are not passed on.
func compareTyped(conv managedfields.TypeConverter, from, to *unstructured.Unstructured) (*smdtyped.TypedValue, *smdtyped.Comparison, error) {
	a, err := conv.ObjectToTyped(from, smdtyped.AllowDuplicates)
	if err != nil {
		return nil, nil, errors.New("the live object does not fit its schema")
	}
	b, err := conv.ObjectToTyped(to, smdtyped.AllowDuplicates)
	if err != nil {
		return nil, nil, errors.New("the applied object does not fit its schema")
	}
	c, err := a.Compare(b)
	return a, c, err
}

// fieldPaths lists at most max leaf paths a comparison found changed,
// sorted, as dotted paths: list elements by their key fields
// (containers[name=app]), by index, or as [*] when they are known by
// their value only, so no path carries a field's value.
func fieldPaths(c *smdtyped.Comparison, max int) []string {
	all := c.Modified.Union(c.Added).Union(c.Removed).Leaves()
	var out []string
	all.Iterate(func(p fieldpath.Path) {
		out = append(out, formatPath(p))
	})
	sort.Strings(out)
	out = compactStrings(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func formatPath(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(*pe.FieldName)
		case pe.Key != nil:
			parts := make([]string, 0, len(*pe.Key))
			for _, f := range *pe.Key {
				parts = append(parts, f.Name+"="+keyValue(f.Value))
			}
			b.WriteString("[" + strings.Join(parts, ",") + "]")
		case pe.Index != nil:
			b.WriteString("[" + strconv.Itoa(*pe.Index) + "]")
		default:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

// keyValue prints a list-map key field (a name, a port, a protocol).
func keyValue(v value.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsInt():
		return strconv.FormatInt(v.AsInt(), 10)
	case v.IsBool():
		return strconv.FormatBool(v.AsBool())
	}
	return "*"
}

// contained reports whether every field of a is in b with the same value,
// lists element by element (same length), b possibly holding more fields.
func contained(a, b any) bool {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !contained(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !contained(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	if a == b {
		return true
	}
	x, ok1 := Number(a)
	y, ok2 := Number(b)
	return ok1 && ok2 && x == y
}

// Number is a numeric scalar of an unstructured object as a float.
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case float64:
		return n, true
	case int32:
		return float64(n), true
	}
	return 0, false
}
