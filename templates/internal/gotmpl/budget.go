// This file is stencil's, not Go's: the budget it adds to the forked
// executor (see doc.go).

package gotmpl

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/stencil-dev/stencil/templates/internal/gotmpl/parse"
)

// checkEvery is how many steps pass between two checks of the context and
// two updates of Where.
const checkEvery = 256

// noBound is the bound of a zero Limits field: past any count reachable,
// and far enough from math.MaxInt64 that no count or sum can overflow.
const noBound = math.MaxInt64 / 2

// Limits bound everything executed with one Budget. A zero or negative
// field is no bound.
type Limits struct {
	// Steps bounds the nodes walked (actions, text, if, with, range, ...)
	// plus the range iterations.
	Steps int64
	// RangeIterations bounds the iterations of every range, whatever it
	// ranges over (ints, slices, maps, channels, iterator functions).
	RangeIterations int64
	// TemplateCalls bounds the ExecuteBudget calls and {{template}} actions.
	TemplateCalls int64
	// Depth bounds how deeply those nest.
	Depth int64
	// OutputBytes bounds the bytes written by every execution of the
	// budget, to whatever writer each was given.
	OutputBytes int64
}

// Kind says which bound stopped an execution.
type Kind int

// The kinds of BudgetError.
const (
	KindSteps           Kind = iota + 1 // Limits.Steps
	KindRangeIterations                 // Limits.RangeIterations
	KindTemplateCalls                   // Limits.TemplateCalls
	KindDepth                           // Limits.Depth
	KindOutputBytes                     // Limits.OutputBytes
	KindDone                            // the budget's context is done
)

// String names what the kind counts, such as "range iterations".
func (k Kind) String() string {
	switch k {
	case KindSteps:
		return "steps"
	case KindRangeIterations:
		return "range iterations"
	case KindTemplateCalls:
		return "template calls"
	case KindDepth:
		return "nested template calls"
	case KindOutputBytes:
		return "bytes of output"
	case KindDone:
		return "context done"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Location is a place in a template source.
type Location struct {
	// Name is the name the template text was parsed under (its tree's
	// ParseName): the file, for a {{define}} too.
	Name string
	// Line is the 1-based line, 0 when unknown.
	Line int
}

// BudgetError is the error of an execution its Budget stopped. Once a
// budget has stopped an execution, every later charge to it returns the
// same error.
type BudgetError struct {
	// Kind is the bound that was passed.
	Kind Kind
	// Limit is the bound's value; 0 for KindDone.
	Limit int64
	// Err is the context's error for KindDone, else nil.
	Err error
	// Stack is where the executions were when stopped, innermost first:
	// the node being executed, then the action that called it (an
	// ExecuteBudget from a function, or a {{template}}), and so on out.
	Stack []Location
}

// Error returns "template: NAME:LINE: stopped: WHAT" for the innermost location.
func (e *BudgetError) Error() string {
	what := fmt.Sprintf("more than %d %s", e.Limit, e.Kind)
	if e.Kind == KindDone {
		what = fmt.Sprint(e.Err)
	}
	if len(e.Stack) == 0 {
		return "template: stopped: " + what
	}
	return fmt.Sprintf("template: %s:%d: stopped: %s", e.Stack[0].Name, e.Stack[0].Line, what)
}

// Unwrap returns the context's error for KindDone.
func (e *BudgetError) Unwrap() error { return e.Err }

// Budget is shared by every execution of one job (for stencil, one render):
// the templates it executes one after the other, the {{template}} actions
// they run and the executions that functions they call start with
// ExecuteBudget (Helm's include and tpl). It counts steps, range
// iterations, template calls, nesting and output bytes against its Limits,
// and every few hundred steps stops if its context is done.
//
// A Budget is used by one goroutine at a time (nested executions run on the
// caller's goroutine); only Where may be called from another.
type Budget struct {
	limits Limits
	ctx    context.Context
	done   <-chan struct{}

	steps, next            int64 // next: the step count of the next check
	ranges, calls, written int64
	depth                  int64
	cur                    *state // innermost running execution
	err                    *BudgetError
	where                  atomic.Pointer[[]frame]
}

// frame is one execution's place: its template's tree and current node.
type frame struct {
	tree *parse.Tree
	node parse.Node
}

// NewBudget returns a budget stopping executions once ctx is done or a
// limit is passed.
func NewBudget(ctx context.Context, l Limits) *Budget {
	for _, f := range []*int64{&l.Steps, &l.RangeIterations, &l.TemplateCalls, &l.Depth, &l.OutputBytes} {
		if *f <= 0 || *f > noBound {
			*f = noBound
		}
	}
	b := &Budget{limits: l, ctx: ctx, done: ctx.Done()}
	b.setNext()
	return b
}

// Where returns where the executions were at the latest check (every few
// hundred steps, and when a top-level execution starts), innermost first;
// nil before the first. It is safe to call from any goroutine.
func (b *Budget) Where() []Location {
	p := b.where.Load()
	if p == nil {
		return nil
	}
	return locations(*p)
}

// Err returns the *BudgetError that stopped an execution of b, nil if
// none did. It is sticky, so it also says whether a failure a function
// reported (and may have rewrapped) came from the budget.
func (b *Budget) Err() error {
	if b.err == nil {
		return nil
	}
	return b.err
}

// Executing returns the template the innermost execution of b runs, nil
// outside an execution. A function that executes templates (Helm's include)
// looks names up in its set, so that it sees the set of the execution that
// called it (a tpl's clone, with the tpl's defines). Only for the
// executing goroutine.
func (b *Budget) Executing() *Template {
	if b.cur == nil {
		return nil
	}
	return b.cur.tmpl
}

func locations(frames []frame) []Location {
	out := make([]Location, len(frames))
	for i, f := range frames {
		if f.tree != nil {
			out[i].Name, out[i].Line = f.tree.Location(f.node)
		}
	}
	return out
}

// stack returns the frames of s and the executions it runs in, innermost first.
func stack(s *state) []frame {
	var out []frame
	for ; s != nil; s = s.parent {
		out = append(out, frame{tree: s.tmpl.Tree, node: s.node})
	}
	return out
}

// fail records and returns the error stopping every execution of b.
func (b *Budget) fail(s *state, kind Kind, limit int64, err error) *BudgetError {
	if b.err == nil {
		frames := stack(s)
		b.where.Store(&frames)
		b.err = &BudgetError{Kind: kind, Limit: limit, Err: err, Stack: locations(frames)}
	}
	b.next = 0 // every later step checks, and fails
	return b.err
}

// stop fails like fail and ends the execution.
func (s *state) stop(kind Kind, limit int64, err error) {
	panic(s.budget.fail(s, kind, limit, err))
}

// step charges one step. It is the executor's per-node cost: an increment
// and a compare; check runs every checkEvery steps.
func (s *state) step() {
	b := s.budget
	b.steps++
	if b.steps >= b.next {
		s.check()
	}
}

// check stops the execution past the step or range bound, when the
// context is done, or after an earlier failure; else it records Where and
// sets the next check.
func (s *state) check() {
	b := s.budget
	switch {
	case b.err != nil:
		panic(b.err)
	case b.steps > b.limits.Steps:
		s.stop(KindSteps, b.limits.Steps, nil)
	case b.ranges > b.limits.RangeIterations:
		s.stop(KindRangeIterations, b.limits.RangeIterations, nil)
	}
	select {
	case <-b.done:
		s.stop(KindDone, 0, b.ctx.Err())
	default:
	}
	frames := stack(s)
	b.where.Store(&frames)
	b.setNext()
}

// setNext sets the step count of the next check: checkEvery steps on, or
// sooner at the first step or iteration past a bound (every iteration is
// also a step). No sum can overflow.
func (b *Budget) setNext() {
	b.next = b.steps + min(checkEvery-1, b.limits.Steps-b.steps, b.limits.RangeIterations-b.ranges) + 1
}

// iterate charges one range iteration of r, and one step. The range bound
// is checked by check: next is never further than the iterations left.
func (s *state) iterate(r *parse.RangeNode) {
	s.budget.ranges++
	s.at(r)
	s.step()
}

// enter charges a template call made by caller (nil for a top-level
// execution) and returns the error stopping it, if any.
func (b *Budget) enter(caller *state) *BudgetError {
	b.calls++
	b.depth++
	switch {
	case b.err != nil:
		return b.err
	case b.calls > b.limits.TemplateCalls:
		return b.fail(caller, KindTemplateCalls, b.limits.TemplateCalls, nil)
	case b.depth > b.limits.Depth:
		return b.fail(caller, KindDepth, b.limits.Depth, nil)
	}
	select {
	case <-b.done:
		return b.fail(caller, KindDone, 0, b.ctx.Err())
	default:
	}
	return nil
}

// push makes s the innermost execution; pop undoes it.
func (b *Budget) push(s *state) {
	b.cur = s
	if s.parent == nil {
		frames := stack(s)
		b.where.Store(&frames)
	}
}

func (b *Budget) pop(s *state) {
	b.cur = s.parent
	b.depth--
}

// budgetWriter counts the bytes an execution writes.
type budgetWriter struct {
	w io.Writer
	b *Budget
}

func (w *budgetWriter) Write(p []byte) (int, error) {
	b := w.b
	b.written += int64(len(p))
	if b.written > b.limits.OutputBytes {
		return 0, b.fail(b.cur, KindOutputBytes, b.limits.OutputBytes, nil)
	}
	return w.w.Write(p)
}

// WriteString is Write for a string, without copying it when the
// underlying writer takes strings (a bytes.Buffer).
func (w *budgetWriter) WriteString(s string) (int, error) {
	b := w.b
	b.written += int64(len(s))
	if b.written > b.limits.OutputBytes {
		return 0, b.fail(b.cur, KindOutputBytes, b.limits.OutputBytes, nil)
	}
	return io.WriteString(w.w, s)
}
