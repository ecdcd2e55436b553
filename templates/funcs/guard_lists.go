package funcs

import (
	"reflect"
	"sort"

	"github.com/stencil-dev/stencil/templates/measure"
)

// This file holds the functions that build lists and maps: each charges
// the render's budget for what it allocates before it allocates it. It
// stays: a list too large is an error at the line of the call, the same on
// every run, not a kill at the worker's memory ceiling.

// list is sprig's list (and tuple).
func (g *Guard) list(v ...any) ([]any, error) {
	return v, g.take("list", measure.MulSat(int64(len(v)), elementBytes))
}

// dict is sprig's dict; keys that are not strings print with fmt.
func (g *Guard) dict(dict func(...any) map[string]any) func(...any) (map[string]any, error) {
	return func(v ...any) (map[string]any, error) {
		n := int64(len(v)+1) / 2 * elementBytes
		for i := 0; i < len(v); i += 2 {
			if s, ok := v[i].(string); ok {
				n = measure.AddSat(n, int64(len(s)))
				continue
			}
			size, err := g.printSize("dict", v[i])
			if err != nil {
				return nil, err
			}
			n = measure.AddSat(n, size)
		}
		if err := g.take("dict", n); err != nil {
			return nil, err
		}
		return dict(v...), nil
	}
}

// listLen is the length of a list argument, or an error naming its type.
func listLen(fn string, l any) (int, error) {
	switch x := l.(type) {
	case []any:
		return len(x), nil
	case nil:
		return 0, funcError(fn, "the list is nil")
	}
	v := reflect.ValueOf(l)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return 0, funcError(fn, "want a list, got a %T", l)
	}
	return v.Len(), nil
}

// grow wraps append, prepend and their must forms: each copies the list,
// so the copy is charged first.
func (g *Guard) grow(fn string, f func(list, v any) ([]any, error)) func(list, v any) ([]any, error) {
	return func(list, v any) ([]any, error) {
		n, err := listLen(fn, list)
		if err != nil {
			return nil, err
		}
		if err := g.take(fn, measure.MulSat(int64(n)+1, elementBytes)); err != nil {
			return nil, err
		}
		out, err := f(list, v)
		return out, scrub(fn, err)
	}
}

// concat is sprig's concat, charged before it copies.
func (g *Guard) concat(concat func(...any) any) func(...any) (any, error) {
	return func(lists ...any) (any, error) {
		var n int64
		for _, l := range lists {
			k, err := listLen("concat", l)
			if err != nil {
				return nil, err
			}
			n = measure.AddSat(n, int64(k))
		}
		if err := g.take("concat", measure.MulSat(n, elementBytes)); err != nil {
			return nil, err
		}
		return concat(lists...), nil
	}
}

// chunk wraps chunk and mustChunk: a size below 1 is refused (sprig
// divides by it).
func (g *Guard) chunk(fn string, f func(int, any) ([][]any, error)) func(int, any) ([][]any, error) {
	return func(size int, list any) ([][]any, error) {
		if size < 1 {
			return nil, funcError(fn, "the chunk size must be at least 1, got %d", size)
		}
		n, err := listLen(fn, list)
		if err != nil {
			return nil, err
		}
		if err := g.take(fn, measure.MulSat(measure.AddSat(int64(n), int64(n/size)+1), elementBytes)); err != nil {
			return nil, err
		}
		out, err := f(size, list)
		return out, scrub(fn, err)
	}
}

// uniq is sprig's uniq (first occurrences, in order) in linear time for
// scalars; other elements compare with reflect.DeepEqual, pairwise, at
// most maxPairs comparisons.
func (g *Guard) uniq(fn string) func(any) ([]any, error) {
	const maxPairs = 1 << 20
	return func(list any) ([]any, error) {
		n, err := listLen(fn, list)
		if err != nil {
			return nil, err
		}
		if err := g.take(fn, measure.MulSat(int64(n), elementBytes)); err != nil {
			return nil, err
		}
		v := reflect.ValueOf(list)
		out := []any{}
		seen := map[any]bool{}
		var others []any
		for i := range n {
			e := v.Index(i).Interface()
			if e == nil || reflect.TypeOf(e).Comparable() && isScalar(e) {
				if !seen[e] {
					seen[e] = true
					out = append(out, e)
				}
				continue
			}
			if int64(len(others))*int64(n) > maxPairs {
				return nil, tooLarge(fn, "more than %d comparisons of maps and lists", maxPairs)
			}
			dup := false
			for _, o := range others {
				if reflect.DeepEqual(o, e) {
					dup = true
					break
				}
			}
			if !dup {
				others = append(others, e)
				out = append(out, e)
			}
		}
		return out, nil
	}
}

func isScalar(v any) bool {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// keys is sprig's keys, sorted: Go maps iterate in random order, so
// sprig's keys differ from one render to the next.
func (g *Guard) keys(dicts ...map[string]any) ([]string, error) {
	var n int64
	for _, d := range dicts {
		n += int64(len(d))
	}
	if err := g.take("keys", measure.MulSat(n, elementBytes)); err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for _, d := range dicts {
		for k := range d {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// values is sprig's values, in the order of their sorted keys.
func (g *Guard) values(d map[string]any) ([]any, error) {
	if err := g.take("values", measure.MulSat(int64(len(d)), elementBytes)); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = d[k]
	}
	return out, nil
}

// deepCopy wraps deepCopy and mustDeepCopy: the value is measured first,
// since a copy of a shared value copies it once per reference.
func (g *Guard) deepCopy(fn string, f func(any) (any, error)) func(any) (any, error) {
	return func(v any) (any, error) {
		m := measure.New(fn, g.remaining())
		s, err := m.Measure(v)
		if err != nil {
			return nil, err
		}
		if err := g.take(fn, measure.AddSat(measure.MulSat(s.Items, elementBytes), s.Bytes)); err != nil {
			return nil, err
		}
		out, err := f(v)
		return out, scrub(fn, err)
	}
}
