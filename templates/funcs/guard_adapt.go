package funcs

import (
	"fmt"
	"reflect"
	"time"
)

var errorType = reflect.TypeFor[error]()

// This file adapts sprig's functions to a render's guard generically:
// their results charged, their errors scrubbed of their arguments. It
// stays: scrubbed messages keep tenants' values out of status and events,
// which no process bound does.

// costlyFunc counts the calls of a costly function (MaxCostlyCalls) and
// charges its result.
func costlyFunc(name string, fn any) binder {
	ft, fv := reflect.TypeOf(fn), reflect.ValueOf(fn)
	wt := withError(ft)
	return func(g *Guard) any {
		return reflect.MakeFunc(wt, func(args []reflect.Value) []reflect.Value {
			if err := g.costlyCall(name); err != nil {
				return errorResults(wt, err)
			}
			return chargeResults(g, name, wt, call(fv, args), args)
		}).Interface()
	}
}

// call calls fv with the arguments a reflect.MakeFunc function received:
// a variadic function's last one is already the slice of its variadic
// arguments (sprig's pick, omit, ...), which only CallSlice passes as is.
func call(fv reflect.Value, args []reflect.Value) []reflect.Value {
	if fv.Type().IsVariadic() {
		return fv.CallSlice(args)
	}
	return fv.Call(args)
}

// withError is the type of a function like ft whose last result is an error.
func withError(ft reflect.Type) reflect.Type {
	in := make([]reflect.Type, ft.NumIn())
	for i := range in {
		in[i] = ft.In(i)
	}
	out := []reflect.Type{ft.Out(0), errorType}
	return reflect.FuncOf(in, out, ft.IsVariadic())
}

func errorResults(wt reflect.Type, err error) []reflect.Value {
	e := reflect.New(errorType).Elem()
	e.Set(reflect.ValueOf(err))
	return []reflect.Value{reflect.Zero(wt.Out(0)), e}
}

// chargeResults turns the results of a call into wt's: the first charged,
// an error (returned, or the charge's) scrubbed of the string arguments.
func chargeResults(g *Guard, name string, wt reflect.Type, out, args []reflect.Value) []reflect.Value {
	var err error
	if len(out) == 2 && !out[1].IsNil() {
		err = out[1].Interface().(error)
	} else {
		err = g.charge(name, out[0].Interface())
	}
	if err == nil {
		return []reflect.Value{out[0], reflect.Zero(errorType)}
	}
	return errorResults(wt, scrub(name, err, stringArgs(args)...))
}

// adapt binds a sprig function whose result is charged as it is (see
// guard.charge): a typed closure for the common signatures, reflection
// for the rest. Functions returning numbers, booleans or times are used
// as they are.
func adapt(name string, fn any) binder {
	switch f := fn.(type) {
	case func(string) string:
		return func(g *Guard) any {
			return func(s string) (out string, err error) {
				defer recoverScrubbed(name, &err, s)
				if err = g.room(name, int64(len(s))); err == nil {
					out = f(s)
					err = g.take(name, int64(len(out)))
				}
				return out, err
			}
		}
	case func(string, string) string:
		return func(g *Guard) any {
			return func(a, b string) (out string, err error) {
				defer recoverScrubbed(name, &err, a, b)
				out = f(a, b)
				return out, g.take(name, int64(len(out)))
			}
		}
	case func(any) string:
		return func(g *Guard) any {
			return func(v any) (out string, err error) {
				defer recoverScrubbed(name, &err)
				out = f(v)
				return out, g.take(name, int64(len(out)))
			}
		}
	case func(any) []any:
		return func(g *Guard) any {
			return func(v any) (out []any, err error) {
				defer recoverScrubbed(name, &err)
				out = f(v)
				return out, g.charge(name, out)
			}
		}
	case func(any) ([]any, error):
		return func(g *Guard) any {
			return func(v any) (out []any, err error) {
				defer recoverScrubbed(name, &err)
				if out, err = f(v); err == nil {
					err = g.charge(name, out)
				}
				return out, err
			}
		}
	}
	ft := reflect.TypeOf(fn)
	if ft.NumOut() == 0 || !charged(ft.Out(0)) {
		return static(scrubbing(name, fn))
	}
	fv, wt := reflect.ValueOf(fn), withError(ft)
	return func(g *Guard) any {
		return reflect.MakeFunc(wt, func(args []reflect.Value) (res []reflect.Value) {
			defer func() {
				if r := recover(); r != nil {
					err, ok := r.(error)
					if !ok {
						err = fmt.Errorf("%v", r)
					}
					res = chargeResults(g, name, wt, []reflect.Value{reflect.Zero(wt.Out(0)), reflect.ValueOf(&err).Elem()}, args)
				}
			}()
			return chargeResults(g, name, wt, call(fv, args), args)
		}).Interface()
	}
}

// stringArgs are the string arguments of a call, those of a variadic
// ...string included, which an error must not quote.
func stringArgs(args []reflect.Value) []string {
	var strs []string
	for _, a := range args {
		switch {
		case a.Kind() == reflect.String:
			strs = append(strs, a.String())
		case a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.String:
			for i := range a.Len() {
				strs = append(strs, a.Index(i).String())
			}
		}
	}
	return strs
}

// charged reports a result type the budget counts: strings, lists, maps
// and interfaces that may hold one.
func charged(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Interface, reflect.Array:
		return t != reflect.TypeFor[time.Time]()
	}
	return false
}

// scrubbing wraps a function that returns an error and takes strings
// (semverCompare, mustDateModify, ...) so that its error does not quote
// them; other functions are returned as they are.
func scrubbing(name string, fn any) any {
	ft := reflect.TypeOf(fn)
	strs := false
	for i := range ft.NumIn() {
		strs = strs || ft.In(i).Kind() == reflect.String
	}
	if ft.NumOut() != 2 || ft.Out(1) != errorType || !strs {
		return fn
	}
	fv := reflect.ValueOf(fn)
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		out := call(fv, args)
		if out[1].IsNil() {
			return out
		}
		return errorResults(ft, scrub(name, out[1].Interface().(error), stringArgs(args)...))
	}).Interface()
}
