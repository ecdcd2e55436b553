package infer

// This file writes the tree as a JSON Schema (draft-07), in the subset
// package publish converts to a structural CRD schema: one type per node
// (or integer and string: int-or-string; or none: any value), objects
// with properties and additionalProperties false (closed) or true
// (open), or an additionalProperties schema alone (a map), lists with
// one items schema.

// SchemaDraft is the $schema of an inferred schema.
const SchemaDraft = "http://json-schema.org/draft-07/schema#"

// globalRef is where a subchart's global points: the root's.
const globalRef = "#/properties/global"

type emitter struct {
	t *tree
	// open: never close an object (the walk was incomplete).
	open        bool
	interesting map[*node]bool
}

// document is the schema of the whole tree.
func (e *emitter) document() map[string]any {
	s := e.schema(e.t.root, false)
	s["$schema"] = SchemaDraft
	return s
}

// schema is n's schema; free is set under a node a template writes out
// whole (toYaml...), where only what templates read is listed.
func (e *emitter) schema(n *node, free bool) map[string]any {
	s := map[string]any{}
	k := e.kinds(n)
	free = free || n.free
	switch typ := typeOf(k); typ {
	case "object":
		s["type"] = "object"
		e.object(s, n, free)
	case "array":
		s["type"] = "array"
		items := map[string]any{}
		if n.items != nil {
			items = e.schema(n.items, free)
		}
		s["items"] = items
	case "":
	case "int-or-string":
		s["type"] = []any{"integer", "string"}
	default:
		s["type"] = typ
	}
	if d, ok := e.defaultOf(n, typeOf(k)); ok {
		s["default"] = d
	}
	return s
}

// kinds are the types n's schema allows: values.yaml's, an object's
// when templates read its fields; none when a template tests its type
// or passes it to tpl, and only a list's or an object's when it is
// written out whole (a string there may as well be a map).
func (e *emitter) kinds(n *node) kind {
	if n.anyType {
		return 0
	}
	k := n.kinds
	if n.objectUse || n == e.t.global {
		k |= kObject
	}
	if n.free {
		k &= kObject | kArray
	}
	return k
}

// typeOf names the one type k allows: "" for none or several it cannot
// say, "int-or-string" for integer and string, "number" for integer
// and number.
func typeOf(k kind) string {
	switch k {
	case kObject:
		return "object"
	case kArray:
		return "array"
	case kString:
		return "string"
	case kInteger:
		return "integer"
	case kNumber, kInteger | kNumber:
		return "number"
	case kBoolean:
		return "boolean"
	case kInteger | kString:
		return "int-or-string"
	}
	return ""
}

// object fills an object's schema: under free, what templates read and
// any other key; for an object read by keys computed at render time
// (range, index with a variable), the keys values.yaml sets and any
// other, or, when it sets none, one schema of every entry (what a range
// over it reads); else every key values.yaml sets or a template reads,
// closed when values.yaml gives the object keys of its own.
func (e *emitter) object(s map[string]any, n *node, free bool) {
	switch {
	case free:
		if props := e.properties(n, true); len(props) > 0 {
			s["properties"] = props
		}
		s["additionalProperties"] = true
	case n.dynamic || n.ranged:
		props := e.entries(n)
		if len(props) == 0 && n.items != nil {
			s["additionalProperties"] = e.schema(n.items, false)
			return
		}
		if len(props) > 0 {
			s["properties"] = props
		}
		s["additionalProperties"] = true
	default:
		if props := e.properties(n, false); len(props) > 0 {
			s["properties"] = props
		}
		s["additionalProperties"] = !e.closed(n)
	}
}

// properties are the schemas of n's children: under free, only those
// templates read.
func (e *emitter) properties(n *node, free bool) map[string]any {
	props := map[string]any{}
	for _, k := range sortedKeys(n.props) {
		c := n.props[k]
		if free && !e.read(c) {
			continue
		}
		if c == e.t.global && n != e.t.root {
			props[k] = map[string]any{"$ref": globalRef}
			continue
		}
		props[k] = e.schema(c, free)
	}
	return props
}

// entries are the schemas of the keys values.yaml sets in n, an object
// read by keys computed at render time: what a range over n does with
// an entry (n's items) is done with each of them.
func (e *emitter) entries(n *node) map[string]any {
	if n.items == nil {
		return e.properties(n, false)
	}
	props := map[string]any{}
	for _, k := range sortedKeys(n.props) {
		if c := n.props[k]; c.fromValues || e.read(c) {
			props[k] = e.schema(overlay(c, n.items), false)
		}
	}
	return props
}

// overlay is c with what a template does with o, the items of c's
// parent, done with it too: o's marks and children over c's.
func overlay(c, o *node) *node {
	out := *c
	out.kinds |= o.kinds
	out.read = c.read || o.read
	out.objectUse = c.objectUse || o.objectUse
	out.ranged = c.ranged || o.ranged
	out.dynamic = c.dynamic || o.dynamic
	out.free = c.free || o.free
	out.anyType = c.anyType || o.anyType
	out.written = c.written || o.written
	if len(o.props) > 0 {
		out.props = make(map[string]*node, len(c.props)+len(o.props))
		for k, v := range c.props {
			out.props[k] = v
		}
		for k, v := range o.props {
			if mine := out.props[k]; mine != nil {
				out.props[k] = overlay(mine, v)
			} else {
				out.props[k] = v
			}
		}
	}
	switch {
	case c.items != nil && o.items != nil:
		out.items = overlay(c.items, o.items)
	case o.items != nil:
		out.items = o.items
	}
	return &out
}

// closed reports whether n, an object, takes only the keys listed:
// values.yaml gives it keys of its own (not {} nor null anywhere) and
// the walk was complete.
func (e *emitter) closed(n *node) bool {
	if n.key == "global" && n.parent != nil && n.parent.chartRoot {
		return false // Helm's values shared with every chart: any key
	}
	return !e.open && n.fromValues && !n.emptyMap && !n.null && len(n.props) > 0
}

// read reports whether a template reads n or something below it.
func (e *emitter) read(n *node) bool {
	if r, ok := e.interesting[n]; ok {
		return r
	}
	e.interesting[n] = false // a cycle (global) reads nothing more
	r := n.read || n.written || n.objectUse
	for _, c := range n.props {
		r = r || e.read(c)
	}
	if n.items != nil {
		r = r || e.read(n.items)
	}
	e.interesting[n] = r
	return r
}

// defaultOf is n's default: values.yaml's scalar or list, else the
// literal every template's default gives it, when it has the schema's
// type; none in a list's items.
func (e *emitter) defaultOf(n *node, typ string) (any, bool) {
	for c := n; c != nil; c = c.parent {
		if c.key == itemKey {
			return nil, false // an item's value is an example, not a default of every item
		}
	}
	switch {
	case n.defaultSet && typ != "object":
		return n.def, true
	case !n.defaultSet && n.tplDefSet && !n.tplDefBad && !n.fromValues:
		if typ == "" || typ == literalType(n.tplDefault) ||
			typ == "number" && literalType(n.tplDefault) == "integer" ||
			typ == "int-or-string" && (literalType(n.tplDefault) == "integer" || literalType(n.tplDefault) == "string") {
			return n.tplDefault, true
		}
	}
	return nil, false
}

func literalType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "number"
	}
	return ""
}
