package reconcile

import (
	"encoding/json"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// upToDate reports whether the live object already holds exactly what an
// apply of desired would set, so the apply can be skipped:
//
//  1. every field of desired is in live with an equal value (lists element
//     by element, so fields the server defaults inside elements do not
//     count; quantities compare by value, so "0.5" equals "500m"), and
//  2. every field the stencil field manager owns in live is still in
//     desired: a field removed from the template must be applied away.
//
// A false answer costs one apply; a wrong true answer would leave drift, so
// anything unexpected answers false.
func upToDate(desired, live *unstructured.Unstructured) bool {
	if !subset(desired.Object, live.Object) {
		return false
	}
	owned := false
	for _, mf := range live.GetManagedFields() {
		if mf.Manager != FieldManager || mf.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		owned = true
		if mf.FieldsV1 == nil {
			return false
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			return false
		}
		if !ownedFieldsPresent(fields, desired.Object) {
			return false
		}
	}
	return owned
}

// subset reports whether every field of want is in got with an equal value.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				if wv == nil {
					continue // an explicit null is the field's absence
				}
				return false
			}
			if !subset(wv, gv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	default:
		return scalarEqual(want, got)
	}
}

func scalarEqual(a, b any) bool {
	if a == b {
		return true
	}
	af, aok := number(a)
	bf, bok := number(b)
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
	// A quantity written as a number ("cpu: 1") comes back as a string ("1").
	if aok || bok {
		s, n := as, b
		if bok {
			s, n = bs, a
		}
		if f, ok := number(n); ok {
			q, err := resource.ParseQuantity(s)
			return err == nil && q.AsApproximateFloat64() == f
		}
	}
	return false
}

func number(v any) (float64, bool) {
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

// ownedFieldsPresent walks a managedFields FieldsV1 set and reports whether
// every field it names exists in obj. Keys are f:<name> (a field), k:<json>
// (the list element whose key fields have these values), v:<json> (a set
// element) and i:<n> (a list index); "." is the element itself.
func ownedFieldsPresent(fields map[string]any, obj any) bool {
	for key, sub := range fields {
		if key == "." {
			continue
		}
		child, ok := lookupField(key, obj)
		if !ok {
			return false
		}
		if m, ok := sub.(map[string]any); ok && len(m) > 0 && !ownedFieldsPresent(m, child) {
			return false
		}
	}
	return true
}

func lookupField(key string, obj any) (any, bool) {
	prefix, rest, _ := strings.Cut(key, ":")
	switch prefix {
	case "f":
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[rest]
		return v, ok && v != nil
	case "k":
		var keyFields map[string]any
		if json.Unmarshal([]byte(rest), &keyFields) != nil {
			return nil, false
		}
		list, _ := obj.([]any)
		for _, el := range list {
			if m, ok := el.(map[string]any); ok && keyMatches(keyFields, m) {
				return el, true
			}
		}
	case "v":
		var val any
		if json.Unmarshal([]byte(rest), &val) != nil {
			return nil, false
		}
		list, _ := obj.([]any)
		for _, el := range list {
			if subset(val, el) && subset(el, val) {
				return el, true
			}
		}
	case "i":
		i, err := strconv.Atoi(rest)
		list, _ := obj.([]any)
		if err == nil && i >= 0 && i < len(list) {
			return list[i], true
		}
	}
	return nil, false
}

// keyMatches compares a list element's key fields, which the server may have
// defaulted in live but not in desired (a port's protocol: TCP).
func keyMatches(key, el map[string]any) bool {
	for k, v := range key {
		ev, ok := el[k]
		if !ok {
			if k == "protocol" && v == "TCP" {
				continue
			}
			return false
		}
		if !scalarEqual(v, ev) {
			return false
		}
	}
	return true
}
