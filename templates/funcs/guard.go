package funcs

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/measure"
)

// Bounds of the functions of one render. Passing one is a RenderError of
// Reason ReasonTooLarge naming the file and line of the call, never a crash.
// They stay beside the worker's memory ceiling: a bound passed is the same
// error at the same line on every run and in process too (tests, a render
// outside a worker), where the ceiling is a kill at whatever point the
// heap happened to cross it.
const (
	// MaxFunctionBytes is what the functions of one render may produce,
	// all calls together: a string result counts its length, a list or map
	// result elementBytes per element (a value a function builds, such as
	// deepCopy's or fromYaml's, counts all its nested elements), and the
	// walk that checks set and merge for cycles one per element it visits.
	// Functions whose result can be much larger than their arguments
	// (repeat, indent, printf, replace, toYaml, seq, ...) check what is
	// left before they allocate.
	MaxFunctionBytes = 64 << 20
	// MaxCostlyCalls bounds the calls of one render to the functions that
	// take a noticeable time each (derivePassword runs scrypt, about 0.1
	// to 0.3 s; bcrypt, htpasswd and gen* when allowNondeterministic).
	MaxCostlyCalls = 16
	// MaxLoop is the longest list until, untilStep and seq may build.
	MaxLoop = 10000
	// elementBytes is what one element of a list or map counts for in
	// MaxFunctionBytes: about its size in memory.
	elementBytes = 16
)

// Guard is the function budget of one render. Every function of the
// render's map holds the same *Guard (see Map), and the render's
// templates run on one goroutine at a time, so it needs no lock. A nil
// Guard is the one of the parse-time map, which no render executes: it
// checks each call on its own.
type Guard struct {
	max    int64 // the budget: MaxFunctionBytes unless the render set another
	left   int64 // bytes of max not spent yet
	costly int   // costly calls so far
}

// NewGuard returns the guard of a render whose function budget is max
// bytes (MaxFunctionBytes when max is 0 or less).
func NewGuard(max int64) *Guard {
	if max <= 0 {
		max = MaxFunctionBytes
	}
	return &Guard{max: max, left: max}
}

func (g *Guard) limit() int64 {
	if g == nil {
		return MaxFunctionBytes
	}
	return g.max
}

// funcError is an error of one of our functions. Its message names the
// function and says what is wrong in terms of types, counts and sizes,
// never quoting an argument.
func funcError(fn, format string, args ...any) error {
	return &fault.RenderError{Msg: fn + ": " + fmt.Sprintf(format, args...)}
}

// tooLarge is the error of a call that would pass a bound.
func tooLarge(fn, format string, args ...any) error {
	return &fault.RenderError{Reason: fault.ReasonTooLarge, Msg: fn + ": " + fmt.Sprintf(format, args...)}
}

// room checks that n more bytes fit in what is left, without spending them:
// the check made before allocating.
func (g *Guard) room(fn string, n int64) error {
	left := g.remaining()
	if n < 0 || n > left {
		return tooLarge(fn, "result larger than the %d bytes left of the %d its functions may produce in one render (MaxFunctionBytes): %s", left, g.limit(), measure.SizeText(n))
	}
	return nil
}

// take spends n bytes, or fails when they do not fit.
func (g *Guard) take(fn string, n int64) error {
	if err := g.room(fn, n); err != nil {
		return err
	}
	if g != nil {
		g.left -= n
	}
	return nil
}

func (g *Guard) remaining() int64 {
	if g == nil {
		return MaxFunctionBytes
	}
	return g.left
}

// costlyCall counts a call to a costly function.
func (g *Guard) costlyCall(fn string) error {
	if g == nil {
		return nil
	}
	if g.costly >= MaxCostlyCalls {
		return tooLarge(fn, "more than %d calls in one render to functions that take long (MaxCostlyCalls)", MaxCostlyCalls)
	}
	g.costly++
	return nil
}

// charge spends what a function result counts for: the length of a
// string, elementBytes per element of a list or map (not nested: a
// function building nested values charges them itself).
func (g *Guard) charge(fn string, v any) error {
	switch x := v.(type) {
	case string:
		return g.take(fn, int64(len(x)))
	case []any:
		return g.take(fn, measure.MulSat(int64(len(x)), elementBytes))
	case []string:
		return g.take(fn, measure.MulSat(int64(len(x)), elementBytes))
	case map[string]any:
		return g.take(fn, measure.MulSat(int64(len(x)), elementBytes))
	case map[string]string:
		return g.take(fn, measure.MulSat(int64(len(x)), elementBytes))
	case nil, bool, int, int64, float64:
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return g.take(fn, int64(rv.Len()))
	case reflect.Slice, reflect.Map, reflect.Array:
		return g.take(fn, measure.MulSat(int64(rv.Len()), elementBytes))
	}
	return nil
}

// scrub returns err, or the value a function panicked with, as an error
// naming fn whose message has every string argument of at least 3 bytes
// replaced by "…": the errors and panics of sprig functions sometimes
// quote their arguments (a regular expression, a date that does not
// parse), and arguments may be a tenant's values. A *fault.RenderError (ours:
// they never quote arguments) and a budget stop pass unchanged.
func scrub(fn string, err error, args ...string) error {
	var re *fault.RenderError
	if err == nil || errors.As(err, &re) {
		return err
	}
	msg := err.Error()
	for _, a := range args {
		if len(a) >= 3 {
			msg = strings.ReplaceAll(msg, a, "…")
		}
	}
	return &fault.RenderError{Msg: fn + ": " + msg}
}

// recoverScrubbed is deferred by the wrappers of sprig functions: a panic
// (sprig panics on wrong argument types) becomes a scrubbed error.
func recoverScrubbed(fn string, errp *error, args ...string) {
	r := recover()
	if r == nil {
		if *errp != nil {
			*errp = scrub(fn, *errp, args...)
		}
		return
	}
	err, ok := r.(error)
	if !ok {
		err = fmt.Errorf("%v", r)
	}
	*errp = scrub(fn, err, args...)
}

// Output wraps include and tpl: their Output is charged; their errors
// pass unchanged (they name the file and line inside, and a stop of the
// render's budget must reach the executor as it is).
func (g *Guard) Output(fn string, f func(string, any) (string, error)) func(string, any) (string, error) {
	return func(s string, data any) (string, error) {
		out, err := f(s, data)
		if err != nil {
			return "", err
		}
		return out, g.take(fn, int64(len(out)))
	}
}
