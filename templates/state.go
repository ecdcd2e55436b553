package templates

import (
	"bytes"
	"fmt"
	"text/template"

	"github.com/stencil-dev/stencil/templates/budget"
	"github.com/stencil-dev/stencil/templates/funcs"
	"github.com/stencil-dev/stencil/templates/observed"
)

// renderState is what the functions of one render share: the render's
// budget (Limits), which the points of the templates (package budget),
// include and tpl charge, and the set the innermost execution runs in (a
// tpl runs in a clone).
type renderState struct {
	budget budget.Budget
	set    *budget.Set
	g      *funcs.Guard // the render's function budget
	// funcBytes is the render's function budget (guard.go); 0 means
	// MaxFunctionBytes.
	funcBytes int64
	// tpls are the clones tpl parsed its texts in, kept across the
	// renders of the set: a clone of some 200 functions and a parse per
	// call cost more than most renders.
	tpls    map[tplKey]*tplEntry
	base    *budget.Set // the bound set's
	scratch *budget.Set // see tplEntry
	// names are the templates' names as Helm's engine has them (see
	// Bundle.helmNames), to their bundle paths: include finds either.
	names map[string]string
	// observe is the render's Input.Observed, Lookups and Generated, and
	// what it read of them (package observed).
	observe *observed.Log
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
// with include, tpl and the budget's points (package budget) on st. Every
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
		return st.observe.Func(id, path...)
	}
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]any, error) {
		if st.observe == nil {
			return nil, fmt.Errorf("lookup: not in a render")
		}
		return st.observe.Lookups().Func(apiVersion, kind, namespace, name)
	}
	st.funcs = f
	return f
}

// generate calls the generator of point loc's location (a call the
// instrumenter rewrote) through the render's memo: the value kept for the
// call, or a new one (package templates/generators).
func (st *renderState) generate(loc int, args []any) (any, error) {
	name := st.set.Location(loc).Call()
	fn, ok := st.funcs[name]
	if !ok || st.observe == nil {
		return nil, fmt.Errorf("%s: not in a render", name)
	}
	return st.observe.Memo().Call(st.unit, name, fn, args)
}

// pointFuncs returns the functions of points (package budget), bound to
// st and g: each charges the innermost set's budget.
func pointFuncs(st *renderState, g *funcs.Guard, points []budget.Point, first int) template.FuncMap {
	f := make(template.FuncMap, len(points))
	for i, p := range points {
		name := budget.PointName(first + i)
		switch p.Kind {
		case budget.PointInclude:
			f[name] = g.Output("include", func(name string, data any) (string, error) { return st.include(p.Loc, name, data) })
		case budget.PointTpl:
			f[name] = g.Output("tpl", func(text string, data any) (string, error) { return st.tpl(p.Loc, text, data) })
		case budget.PointGenerator:
			f[name] = func(args ...any) (any, error) { return st.generate(p.Loc, args) }
		default:
			f[name] = func() *struct{} { return st.budget.Point(st.set, p) }
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
	set *budget.Set
	st  *renderState
	g   *funcs.Guard
}

// newBoundSet clones the bundle's parsed set and binds a funcMap of its
// own to the clone. (The parsed set itself is the first boundSet: see
// Bundle.parse.)
func (b *Bundle) newBoundSet(ps *parsedSet) (*boundSet, error) {
	set, err := ps.tmpl.CloneShared()
	if err != nil {
		return nil, err
	}
	bs := newBoundSetOf(set)
	t := set.Template()
	t.Funcs(funcMap(bs.st, bs.g, b.spec.AllowNondeterministic))
	t.Funcs(pointFuncs(bs.st, bs.g, set.Points(), 0))
	return bs, nil
}

func newBoundSetOf(set *budget.Set) *boundSet {
	g := funcs.NewGuard(0)
	return &boundSet{set: set, st: &renderState{g: g}, g: g}
}

// reset prepares the set for a render with budget: a fresh function
// budget of st.funcBytes and no costly call made.
func (bs *boundSet) reset(b budget.Budget) {
	bs.st.budget = b
	bs.st.set, bs.st.base = bs.set, bs.set
	*bs.g = *funcs.NewGuard(bs.st.funcBytes)
}

// execute runs the template name of the innermost set, as one call of
// the render's budget, writing to buf; site is the call's location (nil
// for a file).
func (st *renderState) execute(buf *bytes.Buffer, site *budget.Location, name string, data any) error {
	tmpl := st.set.Template()
	t := tmpl.Lookup(name)
	if t == nil {
		if file, ok := st.names[name]; ok {
			t = tmpl.Lookup(file)
		}
	}
	if t == nil {
		return tmpl.ExecuteTemplate(buf, name, data) // its error
	}
	return st.budget.Run(buf, site, st.set, t, data)
}

// include executes a named template (a define in a helper, or a file) and
// returns its output, as Helm's include. It charges the render's budget.
func (st *renderState) include(site int, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := st.execute(&buf, st.set.Location(site), name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}
