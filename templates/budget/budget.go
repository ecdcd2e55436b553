package budget

import (
	"context"
	"fmt"
	"io"
	"math"
	"text/template"
)

// This file holds the budget of one render (Limits): what the points
// instrument.go inserts into the parsed templates, the file executions,
// include and tpl charge. The templates run on text/template; the budget
// sees them only through these calls.

// budgetKind says which bound stopped a render.
type budgetKind int

const (
	stopSteps budgetKind = iota + 1
	stopRangeIterations
	stopTemplateCalls
	stopDepth
	stopOutputBytes
	stopDone // the render's context is done
)

// Location is a place in a bundle file: where a point of the templates
// is, and so what a stop or Progress names. A render's locations are its
// Set's table, never changed after the bundle is parsed.
type Location struct {
	file string
	line int
	call string // for a {{template}}'s points: the template called
}

// Call returns the template a {{template}}'s point calls, or the
// generator a generator's point calls (PointGenerator); "" for others.
func (l *Location) Call() string { return l.call }

// budgetError is the error of a render its budget stopped. Once a budget
// has stopped, every later charge returns the same error.
type budgetError struct {
	kind budgetKind
	at   *Location // innermost location executing, nil before the first point
	err  error     // the context's error for stopDone
}

func (e *budgetError) Error() string {
	what := "stopped: " + e.kind.String()
	if e.kind == stopDone {
		what = fmt.Sprintf("stopped: %v", e.err)
	}
	if e.at == nil {
		return "template: " + what
	}
	return fmt.Sprintf("template: %s:%d: %s", e.at.file, e.at.line, what)
}

func (e *budgetError) Unwrap() error { return e.err }

func (k budgetKind) String() string {
	switch k {
	case stopSteps:
		return "steps"
	case stopRangeIterations:
		return "range iterations"
	case stopTemplateCalls:
		return "template calls"
	case stopDepth:
		return "nested template calls"
	case stopOutputBytes:
		return "bytes of output"
	}
	return "context done"
}

// Budget counts what the templates of one render execute against its
// Limits, and stops the render once ctx is done. It is used by the
// render's goroutine only (include and tpl run on it); progress is what
// another goroutine may read. The zero Budget is none: it keeps nothing
// of a render while its set waits for the next.
type Budget struct {
	limits   Limits // with defaults
	ctx      context.Context
	done     <-chan struct{}
	progress *Progress // nil when the render has none

	steps                int64
	ranges, calls, depth int64
	written              int64
	cur                  *Location // innermost location executing
	err                  *budgetError
}

// noBound caps every limit: far past any count reachable, and far enough
// from math.MaxInt64 that no count or sum overflows.
const noBound = math.MaxInt64 / 2

// New returns the budget of a render whose limits have their defaults
// (Limits.WithDefaults), and starts p (nil for none) over.
func New(ctx context.Context, l Limits, p *Progress) Budget {
	for _, f := range []*int64{&l.MaxSteps, &l.MaxRangeIterations, &l.MaxTemplateCalls, &l.MaxIncludeDepth, &l.MaxOutputBytes} {
		*f = min(*f, noBound)
	}
	p.start()
	return Budget{limits: l, ctx: ctx, done: ctx.Done(), progress: p}
}

// Err returns the error that stopped the render, nil while none has.
func (b *Budget) Err() error {
	if b.err == nil {
		return nil
	}
	return b.err
}

// Depth returns how deeply template calls nest at this point.
func (b *Budget) Depth() int64 { return b.depth }

// SetDepth sets how deeply template calls nest: an execution that was
// stopped mid-way returned without undoing its calls' levels.
func (b *Budget) SetDepth(d int64) { b.depth = d }

// at records the innermost location executing, for a stop and Progress.
func (b *Budget) at(l *Location) {
	if b.cur != l {
		b.cur = l
		if b.progress != nil {
			b.progress.loc.Store(l)
		}
	}
}

// fail records and returns the error stopping the render.
func (b *Budget) fail(kind budgetKind, err error) *budgetError {
	if b.err == nil {
		b.err = &budgetError{kind: kind, at: b.cur, err: err}
	}
	return b.err
}

// charge counts n steps, and checks the context: every point stops a
// render whose context is done.
func (b *Budget) charge(n int64) error {
	b.steps += n
	switch {
	case b.err != nil:
		return b.err
	case b.steps > b.limits.MaxSteps:
		return b.fail(stopSteps, nil)
	}
	return b.checkDone()
}

func (b *Budget) checkDone() error {
	select {
	case <-b.done:
		return b.fail(stopDone, b.ctx.Err())
	default:
		return nil
	}
}

// iterate counts one range iteration and the n steps of its body.
func (b *Budget) iterate(n int64) error {
	b.ranges++
	if b.ranges > b.limits.MaxRangeIterations && b.err == nil {
		return b.fail(stopRangeIterations, nil)
	}
	return b.charge(n)
}

// call counts a template call (a file, {{template}}, include or tpl) and
// one level of nesting, which return undoes.
func (b *Budget) call() error {
	b.calls++
	b.depth++
	switch {
	case b.err != nil:
		return b.err
	case b.calls > b.limits.MaxTemplateCalls:
		return b.fail(stopTemplateCalls, nil)
	case b.depth > b.limits.MaxIncludeDepth:
		return b.fail(stopDepth, nil)
	}
	return b.checkDone()
}

func (b *Budget) ret() { b.depth-- }

// Point charges the budget for point p of set (the function
// PointName names calls it). It stops the render by panicking with the
// budget's error, which text/template returns as the error of the call:
// a single result that is a pointer costs no allocation.
func (b *Budget) Point(set *Set, p Point) *struct{} {
	l := &set.locs[p.Loc]
	b.at(l)
	var err error
	switch p.Kind {
	case pointIter:
		err = b.iterate(p.weight)
	case pointCall:
		if err = b.call(); err == nil {
			if t := set.t.Lookup(l.call); t != nil {
				err = b.enter(set, t)
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

// enter charges the steps of t's body (t of set), which starts.
func (b *Budget) enter(set *Set, t *template.Template) error {
	info, ok := set.infos[t.Tree]
	if !ok {
		return nil // not parsed: text/template says so
	}
	b.at(&set.locs[info.entry])
	return b.charge(info.weight)
}

// Run executes t, a template of set, as one call of the budget, writing
// to w and counting what it writes; site is the call's location (nil for
// a template file), which Progress names again once t returns.
func (b *Budget) Run(w io.Writer, site *Location, set *Set, t *template.Template, data any) error {
	if site != nil {
		b.at(site)
	}
	if err := b.call(); err != nil {
		return err
	}
	if err := b.enter(set, t); err != nil {
		return err
	}
	if err := t.Execute(&budgetWriter{w: w, b: b}, data); err != nil {
		return err
	}
	b.ret()
	if site != nil {
		b.at(site)
	}
	return nil
}

// budgetWriter counts the bytes every execution of a render writes.
type budgetWriter struct {
	w io.Writer
	b *Budget
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	w.b.written += int64(len(p))
	if w.b.written > w.b.limits.MaxOutputBytes {
		return 0, w.b.fail(stopOutputBytes, nil)
	}
	return w.w.Write(p)
}

var _ io.Writer = (*budgetWriter)(nil)
