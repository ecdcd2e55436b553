package infer

import (
	"strings"
	"text/template/parse"
)

// This file evaluates pipelines: commands, their arguments, field
// chains (.Values.a.b, $v.a, (pipeline).a) and variables.

// pipe evaluates a pipeline and binds its variables ($v := or $v =).
func (w *walker) pipe(f *frame, p *parse.PipeNode) *value {
	if p == nil {
		return nil
	}
	v := w.cmds(f, p)
	for _, d := range p.Decl {
		if p.IsAssign {
			f.assign(d.Ident[0], v)
		} else {
			f.vars = append(f.vars, binding{d.Ident[0], v})
		}
	}
	return v
}

// cmds evaluates a pipeline's commands, each given the one before's
// value as its last argument.
func (w *walker) cmds(f *frame, p *parse.PipeNode) *value {
	if p == nil {
		return nil
	}
	var final *value
	for i, c := range p.Cmds {
		final = w.command(f, c, final, i > 0)
	}
	return final
}

// command evaluates one command; final is the value piped in, if piped.
func (w *walker) command(f *frame, c *parse.CommandNode, final *value, piped bool) *value {
	if len(c.Args) == 0 || w.stop() {
		return nil
	}
	rest := c.Args[1:]
	args := make([]*value, 0, len(c.Args))
	for _, a := range rest {
		args = append(args, w.arg(f, a))
	}
	if piped {
		args = append(args, final)
	}
	switch n := c.Args[0].(type) {
	case *parse.IdentifierNode:
		return w.function(f, n.Ident, args, rest, n.Pos)
	case *parse.FieldNode:
		return w.method(f, f.dot, n.Ident, args, n.Pos)
	case *parse.VariableNode:
		return w.method(f, f.lookup(n.Ident[0]), n.Ident[1:], args, n.Pos)
	case *parse.ChainNode:
		return w.method(f, w.arg(f, n.Node), n.Field, args, n.Pos)
	}
	return w.arg(f, c.Args[0])
}

// arg evaluates an argument.
func (w *walker) arg(f *frame, n parse.Node) *value {
	switch n := n.(type) {
	case *parse.DotNode:
		return f.dot
	case *parse.FieldNode:
		return w.fields(f, f.dot, n.Ident, n.Pos)
	case *parse.VariableNode:
		return w.fields(f, f.lookup(n.Ident[0]), n.Ident[1:], n.Pos)
	case *parse.ChainNode:
		return w.fields(f, w.arg(f, n.Node), n.Field, n.Pos)
	case *parse.PipeNode:
		return w.pipe(f, n)
	case *parse.StringNode:
		return strValue(n.Text)
	case *parse.IdentifierNode:
		return w.function(f, n.Ident, nil, nil, n.Pos) // a function of no argument
	}
	return nil
}

// method evaluates a field chain that may end in a method call with
// args: .Values.Table "a.b" and .Values.PathValue "a.b" read the path
// (Helm's Values methods, on a chart's .Values only).
func (w *walker) method(f *frame, base *value, idents []string, args []*value, pos parse.Pos) *value {
	if n := len(idents); n > 0 && (idents[n-1] == "Table" || idents[n-1] == "PathValue") && len(args) > 0 {
		recv := w.fields(f, base, idents[:n-1], pos)
		if p, ok := args[0].constStr(); ok && recv != nil && allChartRoots(recv) {
			return w.fields(f, recv, strings.Split(p, "."), pos)
		}
	}
	return w.fields(f, base, idents, pos)
}

func allChartRoots(v *value) bool {
	for _, n := range v.nodes {
		if !n.chartRoot {
			return false
		}
	}
	return len(v.nodes) > 0
}

// fields evaluates the field chain idents from base.
func (w *walker) fields(f *frame, base *value, idents []string, pos parse.Pos) *value {
	for _, k := range idents {
		if base == nil {
			return nil
		}
		base = w.field(f, base, k, pos)
	}
	return base
}

// field is field k of v: each node's child k (a read), a dict's entry
// k; AsMap of a chart's .Values is the values themselves.
func (w *walker) field(f *frame, v *value, k string, pos parse.Pos) *value {
	if v == nil {
		return nil
	}
	var out []*value
	definite := len(v.nodes) == 1
	for _, n := range v.nodes {
		if n.chartRoot && k == "AsMap" {
			out = append(out, nodeValue(n))
			continue
		}
		c := w.t.child(n, k)
		n.objectUse = true
		w.record(f, c, pos, definite)
		out = append(out, nodeValue(c))
	}
	if v.fields != nil {
		out = append(out, v.fields[k])
	}
	return union(out...)
}
