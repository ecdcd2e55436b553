package infer

import (
	"slices"
	"strconv"
	"strings"
)

// value is what the walker knows of a template value: which values
// nodes it may be, the entries of a dict it is (dict, the template's
// data), the elements of a list it is (list, append), or a string known
// before any render (a literal, .Chart.Name, print of those). nil is a
// value the walker knows nothing of: a number, a function's string, a
// built-in object's field.
type value struct {
	nodes  []*node
	fields map[string]*value // a dict's entries; nil: not a dict
	elems  *value            // a list's elements; nil: none known
	str    string
	isStr  bool
}

func nodeValue(n *node) *value { return &value{nodes: []*node{n}} }

func strValue(s string) *value { return &value{str: s, isStr: true} }

func dictValue() *value { return &value{fields: map[string]*value{}} }

// constStr returns v's string when it is known.
func (v *value) constStr() (string, bool) {
	if v == nil || !v.isStr || len(v.nodes) > 0 {
		return "", false
	}
	return v.str, true
}

// single returns the one node v is, if it is exactly one.
func (v *value) single() *node {
	if v == nil || len(v.nodes) != 1 {
		return nil
	}
	return v.nodes[0]
}

// union is a value that may be any of vs (default, coalesce, ternary,
// a variable assigned in a branch): their nodes, their dicts' entries
// (each key any of theirs), their lists' elements; the string when they
// all are that one.
func union(vs ...*value) *value {
	return unionAt(0, vs)
}

// maxUnionDepth bounds how deep union merges dicts' entries (a dict can
// hold itself: set $d "self" (dict "d" $d)); below, the first wins.
const maxUnionDepth = 8

func unionAt(depth int, vs []*value) *value {
	var out *value
	for _, v := range vs {
		if v == nil {
			continue
		}
		if out == nil {
			out = &value{str: v.str, isStr: v.isStr}
		} else if !v.isStr || !out.isStr || v.str != out.str {
			out.isStr, out.str = false, ""
		}
		out.add(v, depth)
	}
	return out
}

// add adds v's nodes, entries and elements to u's, union's at depth.
func (u *value) add(v *value, depth int) {
	for _, n := range v.nodes {
		if !slices.Contains(u.nodes, n) {
			u.nodes = append(u.nodes, n)
		}
	}
	if v.fields != nil && u.fields == nil {
		u.fields = map[string]*value{}
	}
	for k, f := range v.fields {
		switch {
		case u.fields[k] == nil:
			u.fields[k] = f
		case u.fields[k] != f && depth < maxUnionDepth:
			u.fields[k] = unionAt(depth+1, []*value{u.fields[k], f})
		}
	}
	switch {
	case u.elems == nil:
		u.elems = v.elems
	case v.elems != nil && depth < maxUnionDepth:
		u.elems = unionAt(depth+1, []*value{u.elems, v.elems})
	}
}

// sigDepth bounds how deep a signature describes dicts and lists.
const sigDepth = 5

// sig writes a signature of v: two values with the same one lead a
// define to read the same paths, so it is walked once for them.
func (v *value) sig(b *strings.Builder, depth int) {
	if v == nil {
		b.WriteByte('_')
		return
	}
	if depth > sigDepth {
		b.WriteString("…")
		return
	}
	ids := make([]int, len(v.nodes))
	for i, n := range v.nodes {
		ids[i] = n.id
	}
	slices.Sort(ids)
	b.WriteByte('<')
	for _, id := range ids {
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(',')
	}
	if v.isStr {
		b.WriteString(strconv.Quote(v.str))
	}
	if v.fields != nil {
		b.WriteByte('{')
		for _, k := range sortedKeys(v.fields) {
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			v.fields[k].sig(b, depth+1)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	}
	if v.elems != nil {
		b.WriteByte('[')
		v.elems.sig(b, depth+1)
		b.WriteByte(']')
	}
	b.WriteByte('>')
}
