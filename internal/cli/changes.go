package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// fieldChange is one changed field of a child, as the blast radius lists
// it: the field path and, when they may be shown, the values before and
// after.
type fieldChange struct {
	// path is the field path: spec.replicas,
	// spec.template.spec.containers[name=app].image,
	// metadata.labels["app.kubernetes.io/name"].
	path string
	// before and after are the values, JSON-encoded; "" when the field
	// is absent on that side.
	before, after string
	// shown is false when the values are not printed: a Secret's data,
	// an object or list, a long or multi-line string.
	shown bool
}

// String writes the change as one line: `spec.replicas: 2 → 3`,
// `spec.paused: (none) → true`, `data.password: changed`,
// `spec.template.spec.volumes: added`.
func (c fieldChange) String() string {
	if c.shown {
		return c.path + ": " + orNone(c.before) + " → " + orNone(c.after)
	}
	switch {
	case c.before == "":
		return c.path + ": added"
	case c.after == "":
		return c.path + ": removed"
	}
	return c.path + ": changed"
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// serverOwned are the top-level fields and metadata fields a dry-run
// apply changes by itself (or the server keeps for itself): never a
// change the Bundle makes.
var (
	serverOwned         = []string{"status"}
	serverOwnedMetadata = []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"}
)

// maxShownLength is the longest string value a change line shows.
const maxShownLength = 64

// changedFields lists the fields that differ between live and applied
// (the dry-run result), in path order, without what the server owns. The
// values of a core Secret's data and stringData are never shown.
func changedFields(live, applied *unstructured.Unstructured) []fieldChange {
	a, b := withoutServerFields(live), withoutServerFields(applied)
	var out []fieldChange
	walkChanges("", a, b, &out)
	if applied.GetKind() == "Secret" && applied.GroupVersionKind().Group == "" {
		for i := range out {
			if under(out[i].path, "data") || under(out[i].path, "stringData") {
				out[i].shown = false
			}
		}
	}
	return out
}

// under says whether path is field or below it.
func under(path, field string) bool {
	return path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[")
}

// withoutServerFields copies u's content without serverOwned fields.
func withoutServerFields(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy().Object
	for _, f := range serverOwned {
		delete(c, f)
	}
	for _, f := range serverOwnedMetadata {
		unstructured.RemoveNestedField(c, "metadata", f)
	}
	return c
}

// walkChanges appends to out the leaves where a and b differ, below path.
func walkChanges(path string, a, b any, out *[]fieldChange) {
	switch av := a.(type) {
	case map[string]any:
		if bv, ok := b.(map[string]any); ok {
			keys := make([]string, 0, len(av)+len(bv))
			for k := range av {
				keys = append(keys, k)
			}
			for k := range bv {
				if _, dup := av[k]; !dup {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				walkChanges(joinKey(path, k), av[k], bv[k], out)
			}
			return
		}
	case []any:
		if bv, ok := b.([]any); ok {
			walkList(path, av, bv, out)
			return
		}
	}
	if equalJSON(a, b) {
		return
	}
	*out = append(*out, leafChange(path, a, b))
}

// walkList compares two lists: by the "name" of their items when every
// item of both is an object with a distinct name (containers, env,
// volumes, ports), else by index.
func walkList(path string, a, b []any, out *[]fieldChange) {
	an, aok := byName(a)
	bn, bok := byName(b)
	if aok && bok {
		names := make([]string, 0, len(an)+len(bn))
		for n := range an {
			names = append(names, n)
		}
		for n := range bn {
			if _, dup := an[n]; !dup {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			walkChanges(fmt.Sprintf("%s[name=%s]", path, n), an[n], bn[n], out)
		}
		return
	}
	for i := range max(len(a), len(b)) {
		var x, y any
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		walkChanges(fmt.Sprintf("%s[%d]", path, i), x, y, out)
	}
}

// byName indexes a list of objects by their distinct string names.
func byName(list []any) (map[string]any, bool) {
	out := make(map[string]any, len(list))
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, false
		}
		n, ok := m["name"].(string)
		if _, dup := out[n]; !ok || dup {
			return nil, false
		}
		out[n] = m
	}
	return out, true
}

// leafChange describes one differing field; a nil side is an absent one.
func leafChange(path string, a, b any) fieldChange {
	c := fieldChange{path: path, shown: showable(a) && showable(b)}
	if a != nil {
		c.before = encode(a)
	}
	if b != nil {
		c.after = encode(b)
	}
	return c
}

// showable says whether a value is short enough to print in a line.
func showable(v any) bool {
	switch v := v.(type) {
	case nil, bool, int64, float64, int, int32:
		return true
	case string:
		return len(v) <= maxShownLength && !strings.ContainsAny(v, "\n\r")
	}
	return false
}

func encode(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func equalJSON(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return encode(a) == encode(b)
}

// plainKey is a map key written after a dot in a field path.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinKey appends a map key to a field path: spec.replicas, or
// metadata.labels["app.kubernetes.io/name"] for a key with dots or
// slashes.
func joinKey(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + encode(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
