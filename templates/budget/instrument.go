package budget

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/stencil-dev/stencil/templates/fault"
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
// charge and the location to report (the point N of the set, bound by
// the caller to Budget.Point): a stop, and Progress, name the location
// of the innermost point, call or template started. include and tpl become _stencilN
// too. Names starting with _stencil are refused in a bundle's templates
// and in tpl's text, so a template cannot charge (or refund) the budget.

// reservedPrefix starts the names of the budget's functions.
const reservedPrefix = "_stencil"

// PointKind says what a point's call does.
type PointKind int

// Kinds of point. The caller binds the functions of PointInclude,
// PointTpl and PointGenerator (they take the call's arguments); every
// other point's function calls Budget.Point.
const (
	pointIter      PointKind = iota // a range body starts: one iteration and its steps
	pointCall                       // before a {{template}}: one call, one level deeper, its steps
	pointReturn                     // after it: one level back
	PointInclude                    // an include call
	PointTpl                        // a tpl call
	PointGenerator                  // a generator's call (package templates/generators): Location.Call names it
)

// Point is a call the instrumented templates make: point i of a Set is
// the function PointName(i).
type Point struct {
	// Kind is what the call does.
	Kind PointKind
	// Loc is the index of the point's location in its Set (Set.Location).
	Loc    int
	weight int64 // pointIter: the steps of the body
}

// maxWeight bounds the steps one point charges.
const maxWeight = 1<<31 - 1

// PointName returns the name of the function of point i.
func PointName(i int) string {
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

// Set is a template set with the tables its points refer to: a
// bundle's parsed set (and its clones bound to a render), or a clone tpl
// parsed a text in, whose tables extend its parent's.
type Set struct {
	t      *template.Template
	locs   []Location
	points []Point // point i is the function PointName(i)
	infos  map[*parse.Tree]treeInfo
}

// NewSet returns the set of t's templates, none instrumented yet.
func NewSet(t *template.Template) *Set {
	return &Set{t: t, infos: map[*parse.Tree]treeInfo{}}
}

// Template returns the set's templates.
func (s *Set) Template() *template.Template { return s.t }

// Location returns the location of index i (Point.Loc).
func (s *Set) Location(i int) *Location { return &s.locs[i] }

// Points returns the set's points, point i being the function
// PointName(i). The caller must not change them.
func (s *Set) Points() []Point { return s.points }

// Clone returns a clone of the set with tables of its own, which the
// texts tpl parses in it extend.
func (s *Set) Clone() (*Set, error) {
	t, err := s.t.Clone()
	if err != nil {
		return nil, err
	}
	return &Set{t: t, locs: slices.Clone(s.locs), points: slices.Clone(s.points), infos: maps.Clone(s.infos)}, nil
}

// CloneShared returns a clone of the set's templates that shares its
// tables: for a bundle's parsed set, whose tables never change, bound
// to another render's functions.
func (s *Set) CloneShared() (*Set, error) {
	t, err := s.t.Clone()
	if err != nil {
		return nil, err
	}
	return &Set{t: t, locs: s.locs, points: s.points, infos: s.infos}, nil
}

// InstrumentFiles inserts the budget's points into every tree of the set
// not instrumented yet, each point at its own line of the file the tree
// was parsed from; sources are the files' texts, by name. A name
// reserved for the points is a RenderError naming its file and line.
func (s *Set) InstrumentFiles(sources map[string]string) error {
	ins := map[string]*instrumenter{}
	for _, t := range s.t.Templates() {
		tree := t.Tree
		if _, ok := s.infos[tree]; ok || tree == nil {
			continue
		}
		in := ins[tree.ParseName]
		if in == nil {
			in = &instrumenter{set: s, file: tree.ParseName, text: sources[tree.ParseName], line: 1}
			ins[tree.ParseName] = in
		}
		if err := in.tree(tree); err != nil {
			return err
		}
	}
	return nil
}

// InstrumentTpl inserts the budget's points into every tree of the set
// not instrumented yet, which tpl's text at location site parsed: every
// point reports site. It returns the index of the first point it added
// (the points from it on need their functions).
func (s *Set) InstrumentTpl(site int) (first int, err error) {
	first = len(s.points)
	in := &instrumenter{set: s, site: site}
	for _, t := range s.t.Templates() {
		if _, ok := s.infos[t.Tree]; ok || t.Tree == nil {
			continue // instrumented already
		}
		if err := in.tree(t.Tree); err != nil {
			return 0, err
		}
	}
	return first, nil
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
	set  *Set
	file string
	text string // the file's
	site int    // for tpl's text (file "")
	// The line of offset pos: points are mostly met in the order of
	// the text, so lines are counted on from the last one.
	pos  int
	line int
}

// loc returns the location index of a point at pos, calling the template
// named call if not "".
func (in *instrumenter) loc(pos parse.Pos, call string) (int, error) {
	var l Location
	switch {
	case in.file == "" && call == "":
		return in.site, nil
	case in.file == "":
		l = in.set.locs[in.site]
	default:
		l = Location{file: in.file, line: in.lineOf(pos)}
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
	l := Location{file: in.file}
	if in.file == "" {
		l = in.set.locs[in.site]
	} else {
		l.line = in.lineOf(pos)
	}
	return &fault.RenderError{File: l.file, Line: l.line, Msg: fmt.Sprintf("%s is reserved for stencil's execution budget", name)}
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
func (in *instrumenter) point(kind PointKind, pos parse.Pos, call string, weight int64) (*parse.IdentifierNode, error) {
	loc, err := in.loc(pos, call)
	if err != nil {
		return nil, err
	}
	in.set.points = append(in.set.points, Point{Kind: kind, Loc: loc, weight: min(weight, maxWeight)})
	return &parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: pos, Ident: PointName(len(in.set.points) - 1)}, nil
}

// action is the action {{if _stencilN}}{{end}} of a new point: the
// function returns nil, so nothing is printed and no variable is pushed.
func (in *instrumenter) action(kind PointKind, pos parse.Pos, call string, weight int64) (*parse.IfNode, error) {
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
			elseW, err := in.rangeLoop(n)
			if err != nil {
				return 0, err
			}
			w += elseW
		case *parse.TemplateNode:
			call, ret, err := in.templateCall(n)
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

// rangeLoop instruments a range and returns the weight of its else list.
// Its body is charged once per iteration, by a pointIter put first in it
// with the body's weight, so the body weighs nothing in the list around.
func (in *instrumenter) rangeLoop(n *parse.RangeNode) (int64, error) {
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
	iter, err := in.action(pointIter, n.Pos, "", 1+body)
	if err != nil {
		return 0, err
	}
	n.List.Nodes = append([]parse.Node{iter}, n.List.Nodes...)
	return elseW, nil
}

// templateCall instruments a {{template}} call's pipeline and returns the
// actions of its pointCall and pointReturn, to go before and after it.
func (in *instrumenter) templateCall(n *parse.TemplateNode) (call, ret *parse.IfNode, err error) {
	if err := in.pipe(n.Pipe); err != nil {
		return nil, nil, err
	}
	if call, err = in.action(pointCall, n.Pos, n.Name, 0); err != nil {
		return nil, nil, err
	}
	if ret, err = in.action(pointReturn, n.Pos, n.Name, 0); err != nil {
		return nil, nil, err
	}
	return call, ret, nil
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
		var kind PointKind
		var fn string
		switch {
		case id.Ident == "include":
			kind = PointInclude
		case id.Ident == "tpl":
			kind = PointTpl
		case generators.IsFunction(id.Ident):
			kind, fn = PointGenerator, id.Ident
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
