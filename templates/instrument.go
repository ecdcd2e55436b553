package templates

import (
	"fmt"
	"sort"
	"strconv"
	"text/template"
	"text/template/parse"
)

// This file inserts the render's budget (budget.go) into parsed templates.
// text/template cannot be given a budget, but its parse trees are public
// and executed as they are: before a tree runs, stencil rewrites it so
// that it calls the budget where work can repeat.
//
//   - The start of every range body counts one iteration and charges the
//     body's steps: one per node it may walk (the larger branch of each
//     if and with; a nested range's body counts on its own).
//   - Around every {{template}}: before, one template call, one level of
//     nesting and the steps of the template called; after, the level back.
//   - Every include and tpl call is rewritten to a function that is given
//     its location, and counts the call and the steps of what it executes
//     in Go, as the render does for each file (treeInfo).
//
// A point is an action {{$_stencil := _stencilBudget N}} whose number N
// says what to charge and the location to report (pointArg): a stop, and
// Progress, name the location of the innermost point, call or template
// started. The functions' names are refused in a bundle's templates and
// in tpl's text, so a template cannot charge (or refund) the budget.

// Names of the budget's functions and variable: reserved.
const (
	budgetFunc  = "_stencilBudget"
	includeFunc = "_stencilInclude"
	tplFunc     = "_stencilTpl"
	budgetVar   = "$_stencil"
)

// Kinds of point.
const (
	pointIter   = iota // a range body starts: one iteration and its steps
	pointCall          // before a {{template}}: one call, one level deeper, its steps
	pointReturn        // after it: one level back
)

// Bits of a point's number: kind, location index, weight (steps).
const (
	pointKindBits = 2
	pointLocBits  = 30
	maxWeight     = 1<<31 - 1
)

func pointArg(kind, loc int, weight int64) int64 {
	return min(weight, maxWeight)<<(pointKindBits+pointLocBits) | int64(loc)<<pointKindBits | int64(kind)
}

func splitPoint(arg int64) (kind, loc int, weight int64) {
	return int(arg & (1<<pointKindBits - 1)), int(arg >> pointKindBits & (1<<pointLocBits - 1)), arg >> (pointKindBits + pointLocBits)
}

// execSet is a template set with the tables its points refer to: the
// bundle's parsed set (and its clones bound to a render), or a clone tpl
// parsed a text in, whose tables extend its parent's.
type execSet struct {
	t     *template.Template
	locs  []*location
	infos map[*parse.Tree]treeInfo
}

// treeInfo is what a template body charges when it starts: its steps,
// and the location of its start.
type treeInfo struct {
	weight int64
	entry  int
}

// instrumenter rewrites the trees parsed from one text into set: a bundle
// file (each point gets its own line) or tpl's text (every point reports
// site, the tpl call).
type instrumenter struct {
	set      *execSet
	file     string
	newlines []int            // offsets of the file's newlines
	index    map[location]int // set.locs by value, for a file
	site     int              // for tpl's text
}

func newFileInstrumenter(set *execSet, index map[location]int, file, text string) *instrumenter {
	in := &instrumenter{set: set, file: file, index: index}
	for i := range len(text) {
		if text[i] == '\n' {
			in.newlines = append(in.newlines, i)
		}
	}
	return in
}

func newTplInstrumenter(set *execSet, site int) *instrumenter {
	return &instrumenter{set: set, site: site}
}

// loc returns the location index of a point at pos, calling the template
// named call if not "".
func (in *instrumenter) loc(pos parse.Pos, call string) (int, error) {
	l := location{file: in.file, call: call}
	switch {
	case in.index == nil && call == "":
		return in.site, nil
	case in.index == nil:
		l.file, l.line = in.set.locs[in.site].file, in.set.locs[in.site].line
	default:
		l.line = in.line(pos)
		if i, ok := in.index[l]; ok {
			return i, nil
		}
		in.index[l] = len(in.set.locs)
	}
	if len(in.set.locs) >= 1<<pointLocBits {
		return 0, &RenderError{File: l.file, Line: l.line, Reason: ReasonTooLarge, Msg: "too many template actions"}
	}
	in.set.locs = append(in.set.locs, &l)
	return len(in.set.locs) - 1, nil
}

func (in *instrumenter) line(pos parse.Pos) int {
	return 1 + sort.SearchInts(in.newlines, int(pos))
}

// refuse is the error of a reserved name in a template.
func (in *instrumenter) refuse(name string, pos parse.Pos) error {
	l := location{file: in.file}
	if in.index == nil {
		l = *in.set.locs[in.site]
	} else {
		l.line = in.line(pos)
	}
	return &RenderError{File: l.file, Line: l.line, Msg: fmt.Sprintf("%s is reserved for stencil's execution budget", name)}
}

// tree instruments a parsed template and records what its start charges.
func (in *instrumenter) tree(t *parse.Tree) error {
	if t == nil || t.Root == nil {
		return nil
	}
	w, err := in.list(t.Root)
	if err != nil {
		return err
	}
	entry, err := in.loc(t.Root.Pos, "")
	if err != nil {
		return err
	}
	in.set.infos[t] = treeInfo{weight: w, entry: entry}
	return nil
}

// prepend inserts a point at the start of l.
func (in *instrumenter) prepend(l *parse.ListNode, kind int, pos parse.Pos, weight int64) error {
	loc, err := in.loc(pos, "")
	if err != nil {
		return err
	}
	l.Nodes = append([]parse.Node{point(pos, pointArg(kind, loc, weight))}, l.Nodes...)
	return nil
}

// list instruments the nodes of l and returns its weight: one step for
// the list and each node, plus the larger branch of each if and with.
func (in *instrumenter) list(l *parse.ListNode) (int64, error) {
	if l == nil {
		return 0, nil
	}
	w := int64(1)
	nodes := make([]parse.Node, 0, len(l.Nodes))
	for _, n := range l.Nodes {
		w++
		switch n := n.(type) {
		case *parse.ActionNode:
			if err := in.pipe(n.Pipe); err != nil {
				return 0, err
			}
		case *parse.IfNode:
			bw, err := in.branch(&n.BranchNode)
			if err != nil {
				return 0, err
			}
			w += bw
		case *parse.WithNode:
			bw, err := in.branch(&n.BranchNode)
			if err != nil {
				return 0, err
			}
			w += bw
		case *parse.RangeNode:
			if err := in.pipe(n.Pipe); err != nil {
				return 0, err
			}
			body, err := in.list(n.List)
			if err != nil {
				return 0, err
			}
			elseW, err := in.list(n.ElseList)
			if err != nil {
				return 0, err
			}
			w += elseW
			if err := in.prepend(n.List, pointIter, n.Pos, 1+body); err != nil {
				return 0, err
			}
		case *parse.TemplateNode:
			if err := in.pipe(n.Pipe); err != nil {
				return 0, err
			}
			loc, err := in.loc(n.Pos, n.Name)
			if err != nil {
				return 0, err
			}
			nodes = append(nodes, point(n.Pos, pointArg(pointCall, loc, 0)), n, point(n.Pos, pointArg(pointReturn, loc, 0)))
			continue
		}
		nodes = append(nodes, n)
	}
	l.Nodes = nodes
	return min(w, maxWeight), nil
}

// branch instruments an if or with and returns the weight of its larger
// branch.
func (in *instrumenter) branch(b *parse.BranchNode) (int64, error) {
	if err := in.pipe(b.Pipe); err != nil {
		return 0, err
	}
	then, err := in.list(b.List)
	if err != nil {
		return 0, err
	}
	els, err := in.list(b.ElseList)
	return max(then, els), err
}

// pipe refuses the reserved names in a pipeline and rewrites its include
// and tpl calls to the functions given their location.
func (in *instrumenter) pipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	for _, v := range p.Decl {
		if err := in.arg(v); err != nil {
			return err
		}
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			if err := in.arg(a); err != nil {
				return err
			}
		}
		id, ok := c.Args[0].(*parse.IdentifierNode)
		if !ok || (id.Ident != "include" && id.Ident != "tpl") {
			continue
		}
		loc, err := in.loc(c.Pos, "")
		if err != nil {
			return err
		}
		name := includeFunc
		if id.Ident == "tpl" {
			name = tplFunc
		}
		c.Args = append([]parse.Node{
			&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: id.Pos, Ident: name},
			number(id.Pos, int64(loc)),
		}, c.Args[1:]...)
	}
	return nil
}

// arg refuses a reserved name in an argument, and instruments the
// pipelines nested in it.
func (in *instrumenter) arg(n parse.Node) error {
	switch n := n.(type) {
	case *parse.IdentifierNode:
		if reserved(n.Ident) {
			return in.refuse(n.Ident, n.Pos)
		}
	case *parse.VariableNode:
		if len(n.Ident) > 0 && n.Ident[0] == budgetVar {
			return in.refuse(budgetVar, n.Pos)
		}
	case *parse.PipeNode:
		return in.pipe(n)
	case *parse.ChainNode:
		return in.arg(n.Node)
	}
	return nil
}

func reserved(name string) bool {
	return name == budgetFunc || name == includeFunc || name == tplFunc
}

// point is the action {{$_stencil := _stencilBudget arg}}.
func point(pos parse.Pos, arg int64) *parse.ActionNode {
	cmd := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: []parse.Node{
		&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: pos, Ident: budgetFunc},
		number(pos, arg),
	}}
	decl := &parse.VariableNode{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{budgetVar}}
	pipe := &parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Decl: []*parse.VariableNode{decl}, Cmds: []*parse.CommandNode{cmd}}
	return &parse.ActionNode{NodeType: parse.NodeAction, Pos: pos, Pipe: pipe}
}

func number(pos parse.Pos, n int64) *parse.NumberNode {
	return &parse.NumberNode{NodeType: parse.NodeNumber, Pos: pos, IsInt: true, Int64: n, Text: strconv.FormatInt(n, 10)}
}
