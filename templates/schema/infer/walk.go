package infer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/template/parse"

	"github.com/stencil-dev/stencil/templates"
)

// This file walks the parse trees (text/template/parse) the way
// text/template executes them, with values of the walker's own (value)
// in place of the data: every branch is taken, every range body walked
// once with dot an element, every define called with the value its
// caller passes (once per distinct value, value.sig).

// maxSteps bounds the nodes one inference walks; past it the walk
// stops and the schema is left open (Result.Incomplete).
const maxSteps = 20_000_000

// maxCallDepth bounds nested include and template calls.
const maxCallDepth = 64

// walker walks one bundle's templates.
type walker struct {
	p      *templates.Parsed
	t      *tree
	lines  map[string][]int // offsets of each file's newlines
	reads  map[readKey]*Read
	walked map[string]bool // define name and argument signature
	depth  int
	stack  []string // the defines being walked, outermost first
	steps  int
	// incomplete: the walk stopped at maxSteps or maxCallDepth.
	incomplete bool
	notes      map[string]bool
}

type readKey struct {
	node *node
	file string
	line int
}

// frame is the state of one template's execution: its file (for the
// lines of reads), dot and variables ($ first).
type frame struct {
	file string
	dot  *value
	vars []binding
}

type binding struct {
	name string
	v    *value
}

// lookup returns variable name's value.
func (f *frame) lookup(name string) *value {
	for i := len(f.vars) - 1; i >= 0; i-- {
		if f.vars[i].name == name {
			return f.vars[i].v
		}
	}
	return nil
}

// assign sets variable name (=): it may hold what it held before, or v.
func (f *frame) assign(name string, v *value) {
	for i := len(f.vars) - 1; i >= 0; i-- {
		if f.vars[i].name == name {
			f.vars[i].v = union(f.vars[i].v, v)
			return
		}
	}
}

// stop reports whether the walk must stop, counting one step.
func (w *walker) stop() bool {
	w.steps++
	if w.steps > maxSteps {
		w.incomplete = true
	}
	return w.incomplete
}

// note records something the walk could not follow, once.
func (w *walker) note(f *frame, pos parse.Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if f.file != "" {
		msg = fmt.Sprintf("%s:%d: %s", f.file, w.line(f.file, pos), msg)
	}
	w.notes[msg] = true
}

// line returns the line of offset pos in file.
func (w *walker) line(file string, pos parse.Pos) int {
	nl, ok := w.lines[file]
	if !ok {
		src := w.p.Sources[file]
		for i := 0; i < len(src); i++ {
			if src[i] == '\n' {
				nl = append(nl, i)
			}
		}
		w.lines[file] = nl
	}
	return sort.SearchInts(nl, int(pos)) + 1
}

// record notes that the template at f reads n at pos; definite is set
// when the value read from was that node alone.
func (w *walker) record(f *frame, n *node, pos parse.Pos, definite bool) {
	n.read = true
	if f.file == "" {
		return
	}
	line := w.line(f.file, pos)
	k := readKey{n, f.file, line}
	if r := w.reads[k]; r != nil {
		r.Definite = r.Definite || definite
		return
	}
	w.reads[k] = &Read{File: f.file, Line: line, Path: n.path(), Definite: definite, node: n}
}

// list walks the nodes of a list.
func (w *walker) list(f *frame, l *parse.ListNode) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		if w.stop() {
			return
		}
		switch n := n.(type) {
		case *parse.ActionNode:
			w.pipe(f, n.Pipe)
		case *parse.IfNode:
			w.branch(f, &n.BranchNode, false)
		case *parse.WithNode:
			w.branch(f, &n.BranchNode, true)
		case *parse.RangeNode:
			w.rangeNode(f, n)
		case *parse.TemplateNode:
			w.call(f, n.Name, w.pipe(f, n.Pipe), n.Pos)
		case *parse.ListNode:
			w.list(f, n)
		}
	}
}

// branch walks an if or a with (dot the pipeline's value in its first
// list): both lists, the pipeline's variables in scope in both.
func (w *walker) branch(f *frame, b *parse.BranchNode, with bool) {
	mark := len(f.vars)
	v := w.pipe(f, b.Pipe)
	inner := len(f.vars)
	dot := f.dot
	if with {
		f.dot = v
	}
	w.list(f, b.List)
	f.dot, f.vars = dot, f.vars[:inner]
	w.list(f, b.ElseList)
	f.vars = f.vars[:mark]
}

// rangeNode walks a range's body once, dot (and its last variable) an
// element of what it ranges over, then its else list.
func (w *walker) rangeNode(f *frame, n *parse.RangeNode) {
	mark := len(f.vars)
	elem := w.elem(w.cmds(f, n.Pipe))
	switch len(n.Pipe.Decl) {
	case 1:
		f.vars = append(f.vars, binding{n.Pipe.Decl[0].Ident[0], elem})
	case 2:
		f.vars = append(f.vars, binding{n.Pipe.Decl[0].Ident[0], nil}, binding{n.Pipe.Decl[1].Ident[0], elem})
	}
	dot := f.dot
	f.dot = elem
	w.list(f, n.List)
	f.dot, f.vars = dot, f.vars[:mark]
	w.list(f, n.ElseList)
}

// elem is an element of v, what a range over it sees: an item of each
// node (a list's, or a map's entries: dynamic keys), a list's elements,
// a dict's entries.
func (w *walker) elem(v *value) *value {
	if v == nil {
		return nil
	}
	var out []*value
	for _, n := range v.nodes {
		n.ranged = true
		out = append(out, nodeValue(w.t.item(n)))
	}
	if v.elems != nil {
		out = append(out, v.elems)
	}
	for _, k := range sortedKeys(v.fields) {
		out = append(out, v.fields[k])
	}
	return union(out...)
}

// call walks the define name (include, template) with dot arg, once per
// distinct arg; a file's name is one too (include (print
// $.Template.BasePath "/x.yaml") .).
func (w *walker) call(f *frame, name string, arg *value, pos parse.Pos) {
	t := w.p.Set.Lookup(name)
	if t == nil {
		if p, ok := w.p.HelmNames[name]; ok {
			t = w.p.Set.Lookup(p)
		}
	}
	if t == nil || t.Tree == nil || t.Root == nil {
		return // a missing define fails the render, not the inference
	}
	var b strings.Builder
	b.WriteString(t.Name())
	b.WriteByte(0)
	arg.sig(&b, 0)
	key := b.String()
	if w.walked[key] {
		return
	}
	w.walked[key] = true
	if slices.Contains(w.stack, t.Name()) {
		// A define calling itself with another value (a walk of a tree
		// of values, traefik's yaml2CommandLineArgsRec): the value may
		// be as deep as the user makes it.
		w.mark(arg, func(n *node) { n.free = true })
		return
	}
	if w.depth >= maxCallDepth {
		w.incomplete = true
		w.note(f, pos, "calls nested more than %d deep: not followed", maxCallDepth)
		return
	}
	w.depth++
	w.stack = append(w.stack, t.Name())
	w.list(&frame{file: t.ParseName, dot: arg, vars: []binding{{"$", arg}}}, t.Root)
	w.stack = w.stack[:len(w.stack)-1]
	w.depth--
}

// tpl walks the templates tpl is given when the walker knows their
// text: a literal, or the string values.yaml gives a node (loki's
// tpl .Values.loki.config .), with dot ctx. What such a text reads is
// marked read, at no file and line of the bundle's templates.
func (w *walker) tpl(f *frame, text, ctx *value, pos parse.Pos) {
	if text == nil {
		return
	}
	var texts []string
	if s, ok := text.constStr(); ok {
		texts = append(texts, s)
	}
	for _, n := range text.nodes {
		if s, ok := n.def.(string); ok {
			texts = append(texts, s)
		}
	}
	for _, s := range texts {
		if !strings.Contains(s, "{{") {
			continue
		}
		var b strings.Builder
		b.WriteString("tpl\x00")
		b.WriteString(s)
		b.WriteByte(0)
		ctx.sig(&b, 0)
		if w.walked[b.String()] {
			continue
		}
		w.walked[b.String()] = true
		tr := parse.New("tpl")
		tr.Mode = parse.SkipFuncCheck
		if _, err := tr.Parse(s, "", "", map[string]*parse.Tree{}); err != nil {
			w.note(f, pos, "tpl of a text that does not parse: not followed")
			continue
		}
		w.depth++
		w.list(&frame{dot: ctx, vars: []binding{{"$", ctx}}}, tr.Root)
		w.depth--
	}
}

// unit walks a chart use's template file with the data a render gives
// it: .Values the use's node, .Chart.Name, .Template.BasePath, and its
// subcharts' data under .Subcharts.
func (w *walker) unit(file string, data *value) {
	w.call(&frame{}, file, data, 0)
}

// chartData is the data of a chart use's templates, its .Values at
// node n.
func chartData(u templates.ChartUse, n *node, subcharts *value) *value {
	d := dictValue()
	d.fields["Values"] = nodeValue(n)
	d.fields["Chart"] = &value{fields: map[string]*value{"Name": strValue(u.Name)}}
	d.fields["Template"] = &value{fields: map[string]*value{"BasePath": strValue(u.BasePath)}}
	d.fields["Subcharts"] = subcharts
	return d
}

// sortedReads lists the reads by file, line and path.
func (w *walker) sortedReads() []Read {
	out := make([]Read, 0, len(w.reads))
	for _, r := range w.reads {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Read) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return slices.Compare(a.Path, b.Path)
	})
	return out
}
