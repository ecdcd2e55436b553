package applyset

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastApplied is kubectl's record of the last client-side apply, which
// holds a Secret's data in clear.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// secretFields are the fields of a core/v1 Secret whose values are never
// shown: not in `stencil diff`, a blast radius, nor an admission warning.
var secretFields = []string{"data", "stringData"}

// MaskSecretData replaces the values of a core/v1 Secret's data and
// stringData in live and applied, as kubectl diff does: "***" where both
// sides hold the same value, "*** (before)" in live and "*** (after)" in
// applied where they differ, so that a change shows without its content;
// kubectl's last-applied-configuration annotation, which holds the data
// in clear, is masked the same way. live is nil for an object to create. Objects of other kinds are left
// alone; it reports whether it masked. It changes its arguments: pass
// copies (CleanForDiff makes one).
func MaskSecretData(live, applied *unstructured.Unstructured) bool {
	if !isSecret(applied) && !isSecret(live) {
		return false
	}
	for _, field := range secretFields {
		before, after := secretValues(live, field), secretValues(applied, field)
		if before != nil {
			_ = unstructured.SetNestedMap(live.Object, maskValues(before, after, "before"), field)
		}
		if after != nil {
			_ = unstructured.SetNestedMap(applied.Object, maskValues(after, before, "after"), field)
		}
	}
	maskLastApplied(live, applied)
	return true
}

// maskLastApplied masks kubectl's last-applied-configuration annotation
// of live and applied as MaskSecretData masks a value of data.
func maskLastApplied(live, applied *unstructured.Unstructured) {
	before, inLive := annotation(live, lastApplied)
	after, inApplied := annotation(applied, lastApplied)
	if inLive {
		setAnnotation(live, lastApplied, maskValues(map[string]any{"": before}, map[string]any{"": after}, "before")[""].(string))
	}
	if inApplied {
		setAnnotation(applied, lastApplied, maskValues(map[string]any{"": after}, map[string]any{"": before}, "after")[""].(string))
	}
}

// annotation is u's annotation key, if u has it.
func annotation(u *unstructured.Unstructured, key string) (string, bool) {
	if u == nil {
		return "", false
	}
	v, ok := u.GetAnnotations()[key]
	return v, ok
}

// setAnnotation sets u's annotation key to v.
func setAnnotation(u *unstructured.Unstructured, key, v string) {
	a := u.GetAnnotations()
	a[key] = v
	u.SetAnnotations(a)
}

// secretValues is u's field as a map, nil when u or the field is absent.
func secretValues(u *unstructured.Unstructured, field string) map[string]any {
	if u == nil {
		return nil
	}
	m, _, _ := unstructured.NestedMap(u.Object, field)
	return m
}

// maskValues masks the values of m: "***" where other holds the same
// value, "*** (side)" elsewhere.
func maskValues(m, other map[string]any, side string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if o, ok := other[k]; ok && reflect.DeepEqual(o, v) {
			out[k] = "***"
		} else {
			out[k] = "*** (" + side + ")"
		}
	}
	return out
}

// isSecret reports whether u is a core/v1 Secret.
func isSecret(u *unstructured.Unstructured) bool {
	return u != nil && isKind(u, "", "Secret")
}

// isSecretPath reports whether a field path (as ChangedFields prints it)
// lies in one of a Secret's secretFields.
func isSecretPath(path string) bool {
	for _, f := range secretFields {
		if path == f || strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}
