package templates

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/stencil-dev/stencil/templates/generators"
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
// A point is an action {{if _stencilN}}{{end}} calling a function of
// no argument (the cheapest call text/template makes) that knows what to
// charge and the location to report (the point N of the set, see
// pointFuncs): a stop, and Progress, name the location of the innermost
// point, call or template started. include and tpl become _stencilN
// too. Names starting with _stencil are refused in a bundle's templates
// and in tpl's text, so a template cannot charge (or refund) the budget.

// reservedPrefix starts the names of the budget's functions.
const reservedPrefix = "_stencil"

// Kinds of point.
const (
	pointIter    = iota // a range body starts: one iteration and its steps
	pointCall           // before a {{template}}: one call, one level deeper, its steps
	pointReturn         // after it: one level back
	pointInclude        // an include call
	pointTpl            // a tpl call
	pointGen            // a generator's call (package templates/generators): location.call names it
)

// point is a call the instrumented templates make.
type point struct {
	kind   int
	loc    int   // index in the set's locs
	weight int64 // pointIter: the steps of the body
}

// maxWeight bounds the steps one point charges.
const maxWeight = 1<<31 - 1

func pointName(i int) string {
	if names := pointNames(); i < len(names) {
		return names[i]
	}
	return reservedPrefix + strconv.Itoa(i)
}

// pointNames are the first names of points, made once.
var pointNames = sync.OnceValue(func() []string {
	names := make([]string, 1024)
	for i := range names {
		names[i] = reservedPrefix + strconv.Itoa(i)
	}
	return names
})

// execSet is a template set with the tables its points refer to: the
// bundle's parsed set (and its clones bound to a render), or a clone tpl
// parsed a text in, whose tables extend its parent's.
type execSet struct {
	t      *template.Template
	locs   []location
	points []point // point i is the function pointName(i)
	infos  map[*parse.Tree]treeInfo
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
	set  *execSet
	file string
	text string // the file's
	site int    // for tpl's text (file "")
	// The line of offset pos: points are mostly met in the order of
	// the text, so lines are counted on from the last one.
	pos  int
	line int
}

func newFileInstrumenter(set *execSet, file, text string) *instrumenter {
	return &instrumenter{set: set, file: file, text: text, line: 1}
}

func newTplInstrumenter(set *execSet, site int) *instrumenter {
	return &instrumenter{set: set, site: site}
}

// loc returns the location index of a point at pos, calling the template
// named call if not "".
func (in *instrumenter) loc(pos parse.Pos, call string) (int, error) {
	var l location
	switch {
	case in.file == "" && call == "":
		return in.site, nil
	case in.file == "":
		l = in.set.locs[in.site]
	default:
		l = location{file: in.file, line: in.lineOf(pos)}
	}
	l.call = call
	in.set.locs = append(in.set.locs, l)
	return len(in.set.locs) - 1, nil
}

// lineOf returns the line of offset pos in the file.
func (in *instrumenter) lineOf(pos parse.Pos) int {
	p := min(max(int(pos), 0), len(in.text))
	if p < in.pos {
		in.pos, in.line = 0, 1
	}
	in.line += strings.Count(in.text[in.pos:p], "\n")
	in.pos = p
	return in.line
}

// refuse is the error of a reserved name in a template.
func (in *instrumenter) refuse(name string, pos parse.Pos) error {
	l := location{file: in.file}
	if in.file == "" {
		l = in.set.locs[in.site]
	} else {
		l.line = in.lineOf(pos)
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

// point adds a point of kind at pos and returns the identifier calling it.
func (in *instrumenter) point(kind int, pos parse.Pos, call string, weight int64) (*parse.IdentifierNode, error) {
	loc, err := in.loc(pos, call)
	if err != nil {
		return nil, err
	}
	in.set.points = append(in.set.points, point{kind: kind, loc: loc, weight: min(weight, maxWeight)})
	return &parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: pos, Ident: pointName(len(in.set.points) - 1)}, nil
}

// action is the action {{if _stencilN}}{{end}} of a new point: the
// function returns nil, so nothing is printed and no variable is pushed.
func (in *instrumenter) action(kind int, pos parse.Pos, call string, weight int64) (*parse.IfNode, error) {
	id, err := in.point(kind, pos, call, weight)
	if err != nil {
		return nil, err
	}
	// The nodes of one action, allocated together.
	n := &struct {
		node parse.IfNode
		pipe parse.PipeNode
		cmd  parse.CommandNode
		list parse.ListNode
		args [1]parse.Node
		cmds [1]*parse.CommandNode
	}{}
	n.args[0] = id
	n.cmd = parse.CommandNode{NodeType: parse.NodeCommand, Pos: pos, Args: n.args[:]}
	n.cmds[0] = &n.cmd
	n.pipe = parse.PipeNode{NodeType: parse.NodePipe, Pos: pos, Cmds: n.cmds[:]}
	n.list = parse.ListNode{NodeType: parse.NodeList, Pos: pos}
	n.node = parse.IfNode{BranchNode: parse.BranchNode{NodeType: parse.NodeIf, Pos: pos, Pipe: &n.pipe, List: &n.list}}
	return &n.node, nil
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
			iter, err := in.action(pointIter, n.Pos, "", 1+body)
			if err != nil {
				return 0, err
			}
			n.List.Nodes = append([]parse.Node{iter}, n.List.Nodes...)
		case *parse.TemplateNode:
			if err := in.pipe(n.Pipe); err != nil {
				return 0, err
			}
			call, err := in.action(pointCall, n.Pos, n.Name, 0)
			if err != nil {
				return 0, err
			}
			ret, err := in.action(pointReturn, n.Pos, n.Name, 0)
			if err != nil {
				return 0, err
			}
			nodes = append(nodes, call, n, ret)
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
		if !ok {
			continue
		}
		var kind int
		var fn string
		switch {
		case id.Ident == "include":
			kind = pointInclude
		case id.Ident == "tpl":
			kind = pointTpl
		case generators.IsFunction(id.Ident):
			kind, fn = pointGen, id.Ident
		default:
			continue
		}
		call, err := in.point(kind, c.Pos, fn, 0)
		if err != nil {
			return err
		}
		c.Args[0] = call
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
	case *parse.PipeNode:
		return in.pipe(n)
	case *parse.ChainNode:
		return in.arg(n.Node)
	}
	return nil
}

func reserved(name string) bool { return strings.HasPrefix(name, reservedPrefix) }
