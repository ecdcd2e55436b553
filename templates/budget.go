package templates

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync/atomic"
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

// location is a place in a bundle file: where a point of the templates
// is, and so what a stop or Progress names. A render's locations are its
// bundle's table (Bundle.locs), never changed after the bundle is parsed.
type location struct {
	file string
	line int
	call string // for a {{template}}'s points: the template called
}

// budgetError is the error of a render its budget stopped. Once a budget
// has stopped, every later charge returns the same error.
type budgetError struct {
	kind budgetKind
	at   *location // innermost location executing, nil before the first point
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

// budget counts what the templates of one render execute against its
// Limits, and stops the render once ctx is done. It is used by the
// render's goroutine only (include and tpl run on it); progress is what
// another goroutine may read.
type budget struct {
	limits   Limits // with defaults
	ctx      context.Context
	done     <-chan struct{}
	progress *Progress // nil when the render has none

	steps                int64
	ranges, calls, depth int64
	written              int64
	cur                  *location // innermost location executing
	err                  *budgetError
}

// noBound caps every limit: far past any count reachable, and far enough
// from math.MaxInt64 that no count or sum overflows.
const noBound = math.MaxInt64 / 2

// newBudget returns the budget of a render whose limits have their defaults.
func newBudget(ctx context.Context, l Limits, p *Progress) budget {
	for _, f := range []*int64{&l.MaxSteps, &l.MaxRangeIterations, &l.MaxTemplateCalls, &l.MaxIncludeDepth, &l.MaxOutputBytes} {
		*f = min(*f, noBound)
	}
	return budget{limits: l, ctx: ctx, done: ctx.Done(), progress: p}
}

// at records the innermost location executing, for a stop and Progress.
func (b *budget) at(l *location) {
	if b.cur != l {
		b.cur = l
		if b.progress != nil {
			b.progress.loc.Store(l)
		}
	}
}

// fail records and returns the error stopping the render.
func (b *budget) fail(kind budgetKind, err error) *budgetError {
	if b.err == nil {
		b.err = &budgetError{kind: kind, at: b.cur, err: err}
	}
	return b.err
}

// charge counts n steps, and checks the context: every point stops a
// render whose context is done.
func (b *budget) charge(n int64) error {
	b.steps += n
	switch {
	case b.err != nil:
		return b.err
	case b.steps > b.limits.MaxSteps:
		return b.fail(stopSteps, nil)
	}
	return b.checkDone()
}

func (b *budget) checkDone() error {
	select {
	case <-b.done:
		return b.fail(stopDone, b.ctx.Err())
	default:
		return nil
	}
}

// iterate counts one range iteration and the n steps of its body.
func (b *budget) iterate(n int64) error {
	b.ranges++
	if b.ranges > b.limits.MaxRangeIterations && b.err == nil {
		return b.fail(stopRangeIterations, nil)
	}
	return b.charge(n)
}

// call counts a template call (a file, {{template}}, include or tpl) and
// one level of nesting, which return undoes.
func (b *budget) call() error {
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

func (b *budget) ret() { b.depth-- }

// budgetWriter counts the bytes every execution of a render writes.
type budgetWriter struct {
	w io.Writer
	b *budget
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	w.b.written += int64(len(p))
	if w.b.written > w.b.limits.MaxOutputBytes {
		return 0, w.b.fail(stopOutputBytes, nil)
	}
	return w.w.Write(p)
}

// Progress reports where a render is to another goroutine, such as a
// watchdog that kills a render and must say which template it was in. Set
// Input.Progress to a new Progress per render and call Where at will.
type Progress struct {
	loc  atomic.Pointer[location]
	file atomic.Pointer[string]
}

// Where returns the bundle file and line the render is executing: the
// latest range iteration, template call, include or tpl it started (for
// tpl's text, the tpl call); KustomizationFile and 0 while kustomize
// runs; "" and 0 before the templates start. Safe to call from any
// goroutine, during and after the render.
func (p *Progress) Where() (file string, line int) {
	if f := p.file.Load(); f != nil {
		return *f, 0
	}
	if l := p.loc.Load(); l != nil {
		return l.file, l.line
	}
	return "", 0
}

func (p *Progress) start() {
	if p != nil {
		p.file.Store(nil)
		p.loc.Store(nil)
	}
}

func (p *Progress) setFile(name string) {
	if p != nil {
		p.file.Store(&name)
	}
}

var _ io.Writer = (*budgetWriter)(nil)
