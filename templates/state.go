package templates

import (
	"bytes"
	"fmt"
	"text/template"

	"github.com/stencil-dev/stencil/templates/funcs"
)

// Bounds of one render. Exceeding one is a RenderError, never a crash.
const (
	// MaxObjects is the most objects one render may produce.
	MaxObjects = 2000
	// MaxOutputBytes is the most bytes the templates of one render may write.
	MaxOutputBytes = 16 << 20
	// MaxIncludeDepth bounds include and tpl recursion.
	MaxIncludeDepth = 100
)

// renderState is what the functions of one render share: the render's
// budget (Limits), which the points of the templates (instrument.go),
// include and tpl charge, and the set the innermost execution runs in (a
// tpl runs in a clone).
type renderState struct {
	budget budget
	set    *execSet
	g      *funcs.Guard // the render's function budget
	// funcBytes is the render's function budget (guard.go); 0 means
	// MaxFunctionBytes.
	funcBytes int64
	// tpls are the clones tpl parsed its texts in, kept across the
	// renders of the set: a clone of some 200 functions and a parse per
	// call cost more than most renders.
	tpls    map[tplKey]*tplEntry
	base    *execSet // the bound set's
	scratch *execSet // see tplEntry
	// names are the templates' names as Helm's engine has them (see
	// Bundle.helmNames), to their bundle paths: include finds either.
	names map[string]string
	// observe is the render's Input.Observed, Lookups and Generated, and
	// what it read of them (observed.go).
	observe *observeLog
	// unit is the file of templates/ being rendered: the scope of the
	// generators' calls (package templates/generators).
	unit string
	// funcs are the functions bound for this render: the generators'
	// points call theirs.
	funcs template.FuncMap
}

// funcMap returns the functions templates may call: sprig's and Helm's,
// bounded, deterministic unless allowNondeterministic, and never able to
// make a value contain itself (guardedFuncs; "# Functions" in doc.go),
// with include, tpl and the budget's points (instrument.go) on st. Every
// function of one map charges g, the function budget (MaxFunctionBytes),
// so each render executes a set whose funcMap is its own (boundSet).
func funcMap(st *renderState, g *funcs.Guard, allowNondeterministic bool) template.FuncMap {
	f := funcs.Map(g, allowNondeterministic)
	// Calls of include and tpl are rewritten to points (pointFuncs);
	// these names remain for the parser, and any other use is an error of
	// text/template (wrong number of arguments).
	f["include"] = func(string, any) (string, error) { return "", fmt.Errorf("include: not called") }
	f["tpl"] = func(string, any) (string, error) { return "", fmt.Errorf("tpl: not called") }
	f["observed"] = func(id string, path ...string) (any, error) {
		if st.observe == nil {
			return nil, fmt.Errorf("observed: not in a render")
		}
		return st.observe.observedFunc(id, path...)
	}
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		if st.observe == nil {
			return nil, fmt.Errorf("lookup: not in a render")
		}
		return st.observe.lookups.Func(apiVersion, kind, namespace, name)
	}
	st.funcs = f
	return f
}

// generate calls the generator of point loc's location (a call the
// instrumenter rewrote) through the render's memo: the value kept for the
// call, or a new one (package templates/generators).
func (st *renderState) generate(loc int, args []any) (any, error) {
	name := st.set.locs[loc].call
	fn, ok := st.funcs[name]
	if !ok || st.observe == nil {
		return nil, fmt.Errorf("%s: not in a render", name)
	}
	return st.observe.memo.Call(st.unit, name, fn, args)
}

// pointFuncs returns the functions of points (instrument.go), bound to st
// and g.
func pointFuncs(st *renderState, g *funcs.Guard, points []point, first int) template.FuncMap {
	f := make(template.FuncMap, len(points))
	for i, p := range points {
		name := pointName(first + i)
		switch p.kind {
		case pointInclude:
			f[name] = g.Output("include", func(name string, data any) (string, error) { return st.include(p.loc, name, data) })
		case pointTpl:
			f[name] = g.Output("tpl", func(text string, data any) (string, error) { return st.tpl(p.loc, text, data) })
		case pointGen:
			f[name] = func(args ...any) (any, error) { return st.generate(p.loc, args) }
		default:
			f[name] = func() *struct{} { return st.point(p) }
		}
	}
	return f
}

// boundSet is a clone of a bundle's parsed templates whose functions are
// bound to one renderState and guard. Binding is most of the fixed cost
// of a small render, so a bundle keeps the sets of finished renders in a
// pool (parsedSet.bound) and a render takes one, resetting its state and
// guard: no two renders hold the same set, and nothing of a render but
// those two (and tpl's clones, for the same bundle) survives it in the
// set (functions keep no other state, and executing a template does not
// change it).
type boundSet struct {
	set *execSet
	st  *renderState
	g   *funcs.Guard
}

// newBoundSet clones the bundle's parsed set and binds a funcMap of its
// own to the clone. (The parsed set itself is the first boundSet: see
// Bundle.parse.)
func (b *Bundle) newBoundSet(ps *parsedSet) (*boundSet, error) {
	t, err := ps.tmpl.t.Clone()
	if err != nil {
		return nil, err
	}
	bs := newBoundSetOf(&execSet{t: t, locs: ps.tmpl.locs, points: ps.tmpl.points, infos: ps.tmpl.infos})
	t.Funcs(funcMap(bs.st, bs.g, b.spec.AllowNondeterministic))
	t.Funcs(pointFuncs(bs.st, bs.g, bs.set.points, 0))
	return bs, nil
}

func newBoundSetOf(set *execSet) *boundSet {
	g := funcs.NewGuard(0)
	return &boundSet{set: set, st: &renderState{g: g}, g: g}
}

// reset prepares the set for a render with budget: a fresh function
// budget of st.funcBytes and no costly call made.
func (bs *boundSet) reset(b budget) {
	bs.st.budget = b
	bs.st.set, bs.st.base = bs.set, bs.set
	*bs.g = *funcs.NewGuard(bs.st.funcBytes)
}

// point charges the budget for a point of the templates (instrument.go).
// It stops the render by panicking with the budget's error, which
// text/template returns as the error of the call: a single result that
// is a pointer costs no allocation.
func (st *renderState) point(p point) *struct{} {
	b := &st.budget
	l := &st.set.locs[p.loc]
	b.at(l)
	var err error
	switch p.kind {
	case pointIter:
		err = b.iterate(p.weight)
	case pointCall:
		if err = b.call(); err == nil {
			if t := st.set.t.Lookup(l.call); t != nil {
				err = st.enter(t)
			}
		}
	case pointReturn:
		b.ret()
	}
	if err != nil {
		panic(err)
	}
	return nil
}

// enter charges the steps of t's body, which starts.
func (st *renderState) enter(t *template.Template) error {
	info, ok := st.set.infos[t.Tree]
	if !ok {
		return nil // not parsed: text/template says so
	}
	st.budget.at(&st.set.locs[info.entry])
	return st.budget.charge(info.weight)
}

// execute runs the template name of the innermost set, as one call of
// the render's budget, writing to buf; site is the call's location (nil
// for a file).
func (st *renderState) execute(buf *bytes.Buffer, site *location, name string, data any) error {
	t := st.set.t.Lookup(name)
	if t == nil {
		if file, ok := st.names[name]; ok {
			t = st.set.t.Lookup(file)
		}
	}
	if t == nil {
		return st.set.t.ExecuteTemplate(buf, name, data) // its error
	}
	return st.run(buf, site, t, data)
}

// run runs t, which is of the innermost set.
func (st *renderState) run(buf *bytes.Buffer, site *location, t *template.Template, data any) error {
	b := &st.budget
	if site != nil {
		b.at(site)
	}
	if err := b.call(); err != nil {
		return err
	}
	if err := st.enter(t); err != nil {
		return err
	}
	if err := t.Execute(&budgetWriter{w: buf, b: b}, data); err != nil {
		return err
	}
	b.ret()
	if site != nil {
		b.at(site)
	}
	return nil
}

// include executes a named template (a define in a helper, or a file) and
// returns its output, as Helm's include. It charges the render's budget.
func (st *renderState) include(site int, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := st.execute(&buf, &st.set.locs[site], name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}
