package funcs

import (
	"reflect"

	"github.com/stencil-dev/stencil/templates/measure"
)

// This file keeps values acyclic: set and merge, the only functions that
// insert into an existing map, refuse an insertion that would make a map
// contain itself (see package measure for why by construction). It stays: a
// cyclic value makes fmt or toYaml overflow the stack, a fatal error of the
// whole process rather than an error at the line that made the cycle.

// memoKey identifies a map or list in memory.
type memoKey struct {
	p uintptr
	n int
	t reflect.Type
}

var mapStringAnyType = reflect.TypeFor[map[string]any]()

// containerKey identifies a map or list for a walk.
func containerKey(v reflect.Value) memoKey {
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer:
		n := 1
		if v.Kind() != reflect.Pointer {
			n = v.Len()
		}
		return memoKey{v.Pointer(), n, v.Type()}
	}
	return memoKey{}
}

func mapPointer(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// asMap returns v as a map[string]any when it is one or of a type whose
// underlying type is one: the data's .Values (values.Values), as Helm's
// common.Values. It is the same map, so its pointer is the same: the
// cycle checks see through the type, and merge merges into it as mergo
// does (mergo merges any map into any map at a key, whatever its type).
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case nil, string, bool, int, int64, float64, []any:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || !rv.Type().ConvertibleTo(mapStringAnyType) {
		return nil, false
	}
	return rv.Convert(mapStringAnyType).Interface().(map[string]any), true
}

// reaches reports whether any map in targets can be reached from roots
// (a root that is a target counts). It walks each map and list once,
// without recursion, and charges g one byte per element visited.
func (g *Guard) reaches(fn string, roots []any, targets map[uintptr]bool) (bool, error) {
	stack := append([]any(nil), roots...)
	seen := map[memoKey]bool{}
	var steps int64
	push := func(e any) {
		steps++
		switch e.(type) {
		case nil, string, bool, int, int64, float64:
		default:
			stack = append(stack, e)
		}
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if m, ok := asMap(v); ok {
			v = m // .Values holding the map set or merged into is a cycle too
		}
		switch x := v.(type) {
		case map[string]any:
			if x == nil {
				continue
			}
			p := mapPointer(x)
			if targets[p] {
				return true, nil
			}
			if k := (memoKey{p, 0, mapStringAnyType}); !seen[k] {
				seen[k] = true
				for _, e := range x {
					push(e)
				}
			}
		case []any:
			if k := containerKey(reflect.ValueOf(x)); len(x) > 0 && !seen[k] {
				seen[k] = true
				for _, e := range x {
					push(e)
				}
			}
		default:
			reflectChildren(reflect.ValueOf(v), seen, push)
		}
		if steps > g.remaining() {
			break
		}
	}
	return false, g.take(fn, steps)
}

// reflectChildren pushes the elements of the other containers a template
// may hold maps in: typed lists and maps ([][]any from chunk), structs and
// pointers.
func reflectChildren(v reflect.Value, seen map[memoKey]bool, push func(any)) {
	switch v.Kind() {
	case reflect.Map, reflect.Slice, reflect.Pointer:
		if v.IsNil() {
			return
		}
		k := containerKey(v)
		if seen[k] {
			return
		}
		seen[k] = true
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() && v.Elem().CanInterface() {
			push(v.Elem().Interface())
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if it.Value().CanInterface() {
				push(it.Value().Interface())
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			if e := v.Index(i); e.CanInterface() {
				push(e.Interface())
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanInterface() {
				push(f.Interface())
			}
		}
	}
}

// set is sprig's set, refusing to make a map contain itself.
func (g *Guard) set(d map[string]any, key string, value any) (map[string]any, error) {
	if d == nil {
		return nil, funcError("set", "the map is nil")
	}
	cycle, err := g.reaches("set", []any{value}, map[uintptr]bool{mapPointer(d): true})
	if err != nil {
		return nil, err
	}
	if cycle {
		return nil, funcError("set", "the value holds the map it is set in: a map cannot contain itself")
	}
	if err := g.take("set", measure.AddSat(elementBytes, int64(len(key)))); err != nil {
		return nil, err
	}
	d[key] = value
	return d, nil
}

// mergeFunc wraps sprig's merge, mergeOverwrite, mustMerge and
// mustMergeOverwrite (merge is one of them, with one source): each source
// is checked, then merged, in turn.
func (g *Guard) mergeFunc(fn string, merge func(dst map[string]any, src map[string]any) (any, error)) func(map[string]any, ...map[string]any) (any, error) {
	return func(dst map[string]any, srcs ...map[string]any) (any, error) {
		var out any = dst
		for _, src := range srcs {
			if err := g.checkMerge(fn, dst, src); err != nil {
				return nil, err
			}
			var err error
			if out, err = merge(dst, src); err != nil {
				return nil, scrub(fn, err)
			}
			if m, ok := out.(map[string]any); ok {
				dst = m
			} else {
				return out, nil // sprig's merge returns "" on an error
			}
		}
		return out, nil
	}
}

// checkMerge refuses a merge of src into dst that would make a map contain
// itself, or modify a value the template did not make as a map (a struct
// or typed map of the data, such as .Capabilities). mergo inserts values
// of src into the maps of dst found at the same keys in both; a cycle
// needs an inserted value from which one of those maps can be reached.
func (g *Guard) checkMerge(fn string, dst, src map[string]any) error {
	if dst == nil || src == nil {
		return nil
	}
	targets := map[uintptr]bool{}
	var candidates []insertion
	if err := mergeTargets(fn, dst, src, targets, &candidates, map[[2]uintptr]bool{}, 0); err != nil {
		return err
	}
	values := make([]any, len(candidates))
	for i, c := range candidates {
		values[i] = c.value
	}
	// Most merges insert nothing that reaches a map merged into: one walk.
	reached, err := g.reaches(fn, values, targets)
	if err != nil {
		return err
	}
	if reached {
		if cycle, err := g.insertionCycle(fn, candidates, targets); err != nil || cycle {
			if err == nil {
				err = funcError(fn, "a value merged in holds a map it is merged into: a map cannot contain itself")
			}
			return err
		}
	}
	return g.take(fn, measure.MulSat(int64(len(src)), elementBytes))
}

// insertion is a value merge may insert into a map.
type insertion struct {
	into  uintptr
	value any
}

// insertionCycle reports whether inserting every candidate closes a
// cycle: one through the new entries, in the graph whose nodes are the
// maps inserted into and whose edges go from each map to the maps its
// inserted value reaches (a cycle needs a new entry, then old ones back).
func (g *Guard) insertionCycle(fn string, candidates []insertion, targets map[uintptr]bool) (bool, error) {
	edges := map[uintptr][]uintptr{}
	for _, c := range candidates {
		for t := range targets {
			hit, err := g.reaches(fn, []any{c.value}, map[uintptr]bool{t: true})
			if err != nil {
				return false, err
			}
			if hit {
				edges[c.into] = append(edges[c.into], t)
			}
		}
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[uintptr]int{}
	var visit func(n uintptr) bool
	visit = func(n uintptr) bool {
		switch state[n] {
		case visiting:
			return true
		case done:
			return false
		}
		state[n] = visiting
		for _, m := range edges[n] {
			if visit(m) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for n := range edges {
		if visit(n) {
			return true, nil
		}
	}
	return false, nil
}

func mergeTargets(fn string, dst, src map[string]any, targets map[uintptr]bool, candidates *[]insertion, seen map[[2]uintptr]bool, depth int) error {
	if depth > measure.MaxValueDepth {
		return tooLarge(fn, "the maps nest more than %d deep (MaxValueDepth)", measure.MaxValueDepth)
	}
	pair := [2]uintptr{mapPointer(dst), mapPointer(src)}
	if seen[pair] {
		return nil
	}
	seen[pair] = true
	targets[pair[0]] = true
	for k, sv := range src {
		dv, ok := dst[k]
		dm, dIsMap := asMap(dv)
		sm, sIsMap := asMap(sv)
		switch {
		case ok && dIsMap && sIsMap && dm != nil && sm != nil:
			if len(dm) == 0 {
				*candidates = append(*candidates, insertion{pair[0], sv})
			}
			if err := mergeTargets(fn, dm, sm, targets, candidates, seen, depth+1); err != nil {
				return err
			}
		case ok && mergesInto(dv) && mergesInto(sv):
			return funcError(fn, "cannot merge into a %T at a key (only maps, .Values included, are merged)", dv)
		default:
			*candidates = append(*candidates, insertion{pair[0], sv})
		}
	}
	return nil
}

// mergesInto reports a value mergo would merge into rather than replace.
func mergesInto(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Pointer:
		return !rv.IsNil()
	case reflect.Struct:
		return true
	}
	return false
}
