package infer

import (
	"slices"
	"strings"
)

// suggest returns path with its first undeclared key replaced by the
// declared key beside it nearest by edit distance, nil when none is
// near (near).
func (c *checker) suggest(path []string) []string {
	for i := range path {
		if c.declared(path[:i+1]) {
			continue
		}
		if path[i] == itemKey {
			return nil
		}
		best, bestD := "", -1
		for _, k := range c.keysAt(path[:i]) {
			if d, ok := near(path[i], k); ok && (bestD < 0 || d < bestD) {
				best, bestD = k, d
			}
		}
		if best == "" {
			return nil
		}
		out := slices.Clone(path)
		out[i] = best
		return out
	}
	return nil
}

// keysAt lists the keys declared at path: those a values.yaml sets and
// those a schema lists, sorted.
func (c *checker) keysAt(path []string) []string {
	set := map[string]bool{}
	n := c.t.root
	for _, k := range path {
		if n == nil {
			break
		}
		if k == itemKey {
			n = n.items
		} else {
			n = n.props[k]
		}
	}
	if n != nil {
		for k, ch := range n.props {
			if ch.fromValues {
				set[k] = true
			}
		}
	}
	for _, d := range c.docs {
		if len(d.path) <= len(path) && slices.Equal(path[:len(d.path)], d.path) {
			schemaKeys(d.doc, d.doc, path[len(d.path):], set, 0)
		}
	}
	return sortedKeys(set)
}

// schemaKeys adds to set the properties schema s lists at path.
func schemaKeys(doc, s any, path []string, set map[string]bool, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > maxRefDepth {
		return
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		if target, ok := resolvePointer(doc, ref[1:]); ok {
			schemaKeys(doc, target, path, set, depth+1)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := m[k].([]any)
		for _, sub := range list {
			schemaKeys(doc, sub, path, set, depth+1)
		}
	}
	props, _ := m["properties"].(map[string]any)
	if len(path) == 0 {
		for k := range props {
			set[k] = true
		}
		return
	}
	if path[0] == itemKey {
		if items, ok := m["items"].(map[string]any); ok {
			schemaKeys(doc, items, path[1:], set, depth+1)
		}
		if ap, ok := m["additionalProperties"].(map[string]any); ok {
			schemaKeys(doc, ap, path[1:], set, depth+1)
		}
		return
	}
	if p, ok := props[path[0]]; ok {
		schemaKeys(doc, p, path[1:], set, depth+1)
	}
}

// near reports whether key b is near enough a to be what a meant, and
// how far (the edit distance, case ignored): within a third of the
// longer's length, or sharing a prefix of 4 or more that covers all of
// the shorter but 2 (replicaCount, replicas).
func near(a, b string) (int, bool) {
	la, lb := strings.ToLower(a), strings.ToLower(b)
	d := editDistance(la, lb)
	longer, shorter := max(len(la), len(lb)), min(len(la), len(lb))
	prefix := 0
	for prefix < shorter && la[prefix] == lb[prefix] {
		prefix++
	}
	return d, 3*d <= longer || prefix >= 4 && prefix >= shorter-2
}

// editDistance is the edit distance of a and b: insertions, deletions,
// substitutions and swaps of two adjacent bytes (prot, port: 1), each
// byte edited once (the optimal string alignment distance).
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
