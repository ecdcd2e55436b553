package infer

import (
	"fmt"
	"text/template/parse"
)

// This file says what each function does to the values it is given, as
// far as the schema is concerned. A function not named here takes
// scalars (quote, upper, int, b64enc, ...): its arguments are read, and
// it returns nothing the walker follows.

// serializers write a whole value out: what they are given may hold
// anything below (free).
var serializers = map[string]bool{
	"toYaml": true, "mustToYaml": true, "toYamlPretty": true, "toJson": true, "mustToJson": true,
	"toPrettyJson": true, "mustToPrettyJson": true, "toRawJson": true, "mustToRawJson": true,
	"toToml": true, "mustToToml": true,
}

// identities return (a part of) their first argument as it is.
var identities = map[string]bool{
	"deepCopy": true, "mustDeepCopy": true, "omit": true, "compact": true, "mustCompact": true,
	"uniq": true, "mustUniq": true, "sortAlpha": true, "reverse": true, "mustReverse": true,
	"without": true, "mustWithout": true, "slice": true, "mustSlice": true, "rest": true, "mustRest": true,
	"initial": true, "mustInitial": true, "unset": true,
}

// alternatives return one of their arguments.
var alternatives = map[string]bool{"coalesce": true, "and": true, "or": true, "default": true}

// typeTests look at their argument's type: it may be of any.
var typeTests = map[string]bool{"typeOf": true, "kindOf": true, "typeIs": true, "kindIs": true, "typeIsLike": true}

// function evaluates a call of function name with args (raw: the
// argument nodes written, without a piped one).
func (w *walker) function(f *frame, name string, args []*value, raw []parse.Node, pos parse.Pos) *value {
	switch {
	case name == "include":
		w.include(f, args, pos)
		return nil
	case name == "tpl":
		if len(args) > 0 {
			w.mark(args[0], func(n *node) { n.free, n.anyType = true, true })
			w.tpl(f, args[0], argAt(args, 1), pos)
		}
		return nil
	case serializers[name]:
		for _, a := range args {
			w.mark(a, func(n *node) { n.free = true })
		}
		return nil
	case typeTests[name]:
		if len(args) > 0 {
			w.shallow(args[len(args)-1], func(n *node) { n.anyType = true })
		}
		return nil
	case identities[name]:
		return argAt(args, 0)
	case alternatives[name]:
		if name == "default" {
			w.literalDefault(args, raw)
		}
		return union(args...)
	}
	return w.collection(f, name, args, raw, pos)
}

// collection evaluates the functions of dicts and lists.
func (w *walker) collection(f *frame, name string, args []*value, raw []parse.Node, pos parse.Pos) *value {
	switch name {
	case "required":
		return argAt(args, len(args)-1)
	case "ternary":
		return union(argAt(args, 0), argAt(args, 1))
	case "first", "last", "mustFirst", "mustLast":
		return w.elem(argAt(args, 0))
	case "index":
		return w.index(f, args, raw, pos)
	case "get":
		if k, ok := argAt(args, 1).constStr(); ok {
			return w.field(f, argAt(args, 0), k, pos)
		}
		w.dynamicKeys(argAt(args, 0))
	case "hasKey":
		if k, ok := argAt(args, 1).constStr(); ok {
			w.field(f, argAt(args, 0), k, pos)
		} else {
			w.dynamicKeys(argAt(args, 0))
		}
	case "dig":
		return w.dig(f, args, pos)
	case "pluck":
		if k, ok := argAt(args, 0).constStr(); ok && len(args) > 1 {
			var out []*value
			for _, d := range args[1:] {
				out = append(out, w.field(f, d, k, pos))
			}
			return &value{elems: union(out...)}
		}
	case "dict":
		return w.dict(args)
	case "pick":
		return w.pick(f, args, pos)
	case "list", "tuple":
		return &value{elems: union(args...)}
	case "append", "push", "mustAppend", "mustPush", "prepend", "mustPrepend":
		return &value{elems: union(w.elem(argAt(args, 0)), argAt(args, 1))}
	case "concat":
		var out []*value
		for _, a := range args {
			out = append(out, w.elem(a))
		}
		return &value{elems: union(out...)}
	case "set":
		return w.set(args)
	case "merge", "mergeOverwrite", "mustMerge", "mustMergeOverwrite":
		return w.merge(args)
	case "values":
		w.dynamicKeys(argAt(args, 0))
		return &value{elems: w.elem(argAt(args, 0))}
	case "keys":
		for _, a := range args {
			w.dynamicKeys(a)
		}
	case "print", "printf", "println", "cat":
		return constPrint(name, args)
	}
	return nil
}

func argAt(args []*value, i int) *value {
	if i < 0 || i >= len(args) {
		return nil
	}
	return args[i]
}

// include walks the define include names, with the value given as dot.
func (w *walker) include(f *frame, args []*value, pos parse.Pos) {
	name, ok := argAt(args, 0).constStr()
	if !ok {
		w.note(f, pos, "include of a name computed at render time: not followed")
		return
	}
	w.call(f, name, argAt(args, 1), pos)
}

// index is index v k...: a key known before the render is a field, an
// integer an element; a computed key makes the keys the user's.
func (w *walker) index(f *frame, args []*value, raw []parse.Node, pos parse.Pos) *value {
	cur := argAt(args, 0)
	for i := 1; i < len(args); i++ {
		if k, ok := args[i].constStr(); ok {
			cur = w.field(f, cur, k, pos)
			continue
		}
		if i < len(raw) {
			if num, ok := raw[i].(*parse.NumberNode); ok && num.IsInt {
				cur = w.elem(cur)
				continue
			}
		}
		w.dynamicKeys(cur)
		return nil
	}
	return cur
}

// dig is dig k1 ... kn default dict: the path, or the default.
func (w *walker) dig(f *frame, args []*value, pos parse.Pos) *value {
	if len(args) < 3 {
		return nil
	}
	cur := args[len(args)-1]
	for _, a := range args[:len(args)-2] {
		k, ok := a.constStr()
		if !ok {
			w.dynamicKeys(cur)
			return nil
		}
		cur = w.field(f, cur, k, pos)
	}
	return union(cur, args[len(args)-2])
}

// dict is dict k1 v1 ...: a value put under a computed key is lost to
// the walker, so it may hold anything.
func (w *walker) dict(args []*value) *value {
	d := dictValue()
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].constStr(); ok {
			d.fields[k] = args[i+1]
		} else {
			w.mark(args[i+1], func(n *node) { n.free = true })
		}
	}
	return d
}

// pick is pick d k...: a dict of d's fields k.
func (w *walker) pick(f *frame, args []*value, pos parse.Pos) *value {
	if len(args) == 0 {
		return nil
	}
	d := dictValue()
	for _, a := range args[1:] {
		k, ok := a.constStr()
		if !ok {
			return argAt(args, 0) // any of d's keys
		}
		d.fields[k] = w.field(f, argAt(args, 0), k, pos)
	}
	return d
}

// set is set d k v: a dict's entry, or a values node's child a template
// writes.
func (w *walker) set(args []*value) *value {
	d, v := argAt(args, 0), argAt(args, 2)
	if d == nil {
		return nil
	}
	k, ok := argAt(args, 1).constStr()
	for _, n := range d.nodes {
		if ok {
			w.t.child(n, k).written = true
		} else {
			n.written = true
		}
	}
	if ok && d.fields != nil {
		d.fields[k] = union(d.fields[k], v)
	}
	if !ok {
		w.mark(v, func(n *node) { n.free = true })
	}
	return d
}

// merge is merge dst src...: dst, which may now hold what each src
// holds (a values node merged into is written).
func (w *walker) merge(args []*value) *value {
	dst := argAt(args, 0)
	if dst == nil {
		return union(args...)
	}
	for _, n := range dst.nodes {
		n.written = true
	}
	for _, src := range args[1:] {
		if src == nil {
			continue
		}
		for _, n := range src.nodes {
			if !containsNode(dst.nodes, n) {
				dst.nodes = append(dst.nodes, n)
			}
		}
		if dst.fields != nil {
			for k, v := range src.fields {
				dst.fields[k] = union(dst.fields[k], v)
			}
		}
	}
	return dst
}

func containsNode(ns []*node, n *node) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// dynamicKeys marks the nodes of v as read by keys the templates
// compute: the keys are the user's.
//
// A chart's .Values itself is not: helpers index it by paths the chart
// names elsewhere (Bitnami's common.utils.getValueFromKey walks
// "auth.password" key by key), which its values.yaml sets.
func (w *walker) dynamicKeys(v *value) {
	w.shallow(v, func(n *node) {
		n.read = true
		if !n.chartRoot {
			n.dynamic = true
		}
	})
}

// shallow applies fn to v's nodes.
func (w *walker) shallow(v *value, fn func(*node)) {
	if v == nil {
		return
	}
	for _, n := range v.nodes {
		fn(n)
	}
}

// mark applies fn to every node v holds: its own, its dict's entries'
// and its list's elements', as a serializer writes them all.
func (w *walker) mark(v *value, fn func(*node)) {
	seen := map[*value]bool{}
	var walk func(v *value, depth int)
	walk = func(v *value, depth int) {
		if v == nil || seen[v] || depth > sigDepth {
			return
		}
		seen[v] = true
		for _, n := range v.nodes {
			fn(n)
		}
		for _, e := range v.fields {
			walk(e, depth+1)
		}
		walk(v.elems, depth+1)
	}
	walk(v, 0)
}

// literalDefault records the literal of default LITERAL .Values.a on the
// node it defaults.
func (w *walker) literalDefault(args []*value, raw []parse.Node) {
	if len(args) != 2 || len(raw) == 0 {
		return
	}
	lit, ok := literal(raw[0])
	n := args[1].single()
	if !ok || n == nil {
		return
	}
	switch {
	case !n.tplDefSet:
		n.tplDefault, n.tplDefSet = lit, true
	case n.tplDefault != lit:
		n.tplDefBad = true
	}
}

// literal is the value of a string, number or boolean literal.
func literal(n parse.Node) (any, bool) {
	switch n := n.(type) {
	case *parse.StringNode:
		return n.Text, true
	case *parse.BoolNode:
		return n.True, true
	case *parse.NumberNode:
		if n.IsInt {
			return n.Int64, true
		}
		if n.IsFloat {
			return n.Float64, true
		}
	}
	return nil, false
}

// constPrint folds print, printf, println and cat of strings known
// before the render (include (printf "%s.labels" .Chart.Name) .).
func constPrint(name string, args []*value) *value {
	strs := make([]any, len(args))
	for i, a := range args {
		s, ok := a.constStr()
		if !ok {
			return nil
		}
		strs[i] = s
	}
	switch name {
	case "print":
		return strValue(fmt.Sprint(strs...))
	case "println":
		return strValue(fmt.Sprintln(strs...))
	case "cat":
		out := ""
		for i, s := range strs {
			if i > 0 {
				out += " "
			}
			out += s.(string)
		}
		return strValue(out)
	}
	if len(strs) == 0 {
		return nil
	}
	format := strs[0].(string)
	for i := 0; i < len(format); i++ {
		if format[i] == '%' && i+1 < len(format) && format[i+1] != 's' && format[i+1] != 'v' && format[i+1] != '%' {
			return nil // a verb of another type: the walker does not guess
		}
	}
	return strValue(fmt.Sprintf(format, strs[1:]...))
}
