package templates

import (
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"
)

// The measure stays: it refuses values that print a memory address
// (different on every render), and stops at the line of the call a value
// that prints exponentially larger than it is or nests deep enough to
// overflow the stack (a fatal error, not a RenderError).
//
// Values in templates are maps and lists that functions build, share and,
// with set and merge, modify. Two things could make a walk over one of
// them (fmt printing it, toYaml, deepCopy, reflect.DeepEqual, ...) run
// away:
//
//   - A cycle: `$_ := set $d "self" $d`. Every walker would recurse until
//     the stack overflows, a fatal error no recover catches. fmt and the
//     template executor's own printing are walkers we do not own, so the
//     walkers cannot all be made cycle-safe: cycles are prevented by
//     construction instead. Only set and merge (and their must and
//     Overwrite forms) insert into an existing map (every list and dict
//     function builds a new value, and sprig never appends in place), and
//     each refuses an insertion that would close a cycle (guard_cycles.go).
//   - Sharing: `$l = list $l $l` twenty times is a small value in memory
//     that prints as 2^20 copies, and a value nested thousands deep prints
//     with an indentation that grows with the square of its depth. Sharing
//     is legitimate (dict "ctx" $ passes the whole data around), so
//     instead every function of ours that walks a value measures it first
//     (measure): a walk remembering each shared map and list, so it takes
//     time in the size of the value in memory, that stops past
//     MaxValueDepth or past the bytes left of the render's budget.

// shape is what measure learns of a value.
type shape struct {
	// bytes bounds the value's size printed by fmt or serialized as JSON or
	// YAML (YAML's indentation included): strings count 6 bytes for each
	// byte JSON may escape.
	bytes int64
	// lines is the value's lines as block YAML, for its parent's indentation.
	lines int64
	// items counts scalars and map keys: what fmt applies a verb's width
	// to, and about what a copy allocates.
	items int64
	// height is how deeply maps and lists nest in it: 0 for a scalar.
	height int
}

// memoKey identifies a map or list in memory.
type memoKey struct {
	p uintptr
	n int
	t reflect.Type
}

// measurer measures values for one function call.
type measurer struct {
	fn    string
	limit int64
	memo  map[memoKey]shape
	// addr is set when the value holds something fmt prints as a memory
	// address, different on every run: a pointer below the top level
	// without a String method, a func or a channel.
	addr bool
	// deep is set when the measure failed on MaxValueDepth, not the limit.
	deep bool
}

func newMeasurer(fn string, limit int64) *measurer {
	return &measurer{fn: fn, limit: limit}
}

// measure measures v, checking MaxValueDepth and the measurer's limit.
func (m *measurer) measure(v any) (shape, error) { return m.value(v, 0) }

func (m *measurer) tooDeep() error {
	m.deep = true
	return tooLarge(m.fn, "the value nests more than %d deep (MaxValueDepth)", MaxValueDepth)
}

func (m *measurer) over(s shape) error {
	if s.bytes > m.limit {
		return tooLarge(m.fn, "the value would print larger than the %d bytes left of what its functions may produce in one render (MaxFunctionBytes)", m.limit)
	}
	return nil
}

func leaf(n int64) shape { return shape{bytes: n, items: 1} }

// stringBytes bounds a string's size escaped for JSON (\u0000 is 6 bytes),
// quoted by fmt's %q or by YAML.
func stringBytes(s string) int64 {
	special := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			special++
		}
	}
	return addSat(int64(len(s)), 2, mulSat(int64(special), 5))
}

func (m *measurer) value(v any, depth int) (shape, error) {
	if depth > MaxValueDepth {
		return shape{}, m.tooDeep()
	}
	switch x := v.(type) {
	case nil:
		return leaf(5), nil
	case string:
		return leaf(stringBytes(x)), nil
	case bool:
		return leaf(5), nil
	case int, int64, float64:
		return leaf(24), nil
	case time.Time:
		return leaf(64), nil
	case map[string]any:
		if len(x) == 0 {
			return leaf(5), nil
		}
		return m.container(memoKey{reflect.ValueOf(x).Pointer(), len(x), mapStringAnyType}, depth, func(s *shape) error {
			for k, e := range x {
				es, err := m.value(e, depth+1)
				if err := m.child(s, stringBytes(k), es, err); err != nil {
					return err
				}
			}
			return nil
		})
	case []any:
		if len(x) == 0 {
			return leaf(5), nil
		}
		return m.container(memoKey{reflect.ValueOf(x).Pointer(), len(x), sliceAnyType}, depth, func(s *shape) error {
			for _, e := range x {
				es, err := m.value(e, depth+1)
				if err := m.child(s, 0, es, err); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return m.reflectValue(reflect.ValueOf(v), depth)
}

var (
	mapStringAnyType = reflect.TypeFor[map[string]any]()
	sliceAnyType     = reflect.TypeFor[[]any]()
	stringerType     = reflect.TypeFor[fmt.Stringer]()
	errorType        = reflect.TypeFor[error]()
)

// container measures a map or list (or what a pointer points to) once per
// call: a value shared by many parents is walked once.
func (m *measurer) container(key memoKey, depth int, walk func(s *shape) error) (shape, error) {
	if s, ok := m.memo[key]; ok {
		if depth+s.height > MaxValueDepth {
			return shape{}, m.tooDeep()
		}
		return s, nil
	}
	s := shape{bytes: 2}
	if err := walk(&s); err != nil {
		return shape{}, err
	}
	if m.memo == nil {
		m.memo = map[memoKey]shape{}
	}
	m.memo[key] = s
	return s, nil
}

// child adds one entry of a container (key bytes 0 for a list element) to
// its shape and checks the limit.
func (m *measurer) child(s *shape, key int64, e shape, err error) error {
	if err != nil {
		return err
	}
	s.bytes = addSat(s.bytes, key, 3, e.bytes, mulSat(2, e.lines))
	s.lines = addSat(s.lines, 1, e.lines)
	s.items = addSat(s.items, 1, e.items)
	s.height = max(s.height, e.height+1)
	return m.over(*s)
}

// reflectValue measures the other values templates may hold: data structs
// (.Composition, .Capabilities, ...), typed maps and lists, pointers.
func (m *measurer) reflectValue(v reflect.Value, depth int) (shape, error) {
	if depth > MaxValueDepth {
		return shape{}, m.tooDeep()
	}
	if !v.IsValid() {
		return leaf(5), nil
	}
	var method int64
	if t := v.Type(); t.Implements(stringerType) || t.Implements(errorType) {
		// fmt prints it with its String or Error method, at any depth:
		// count that, and the fields too, for JSON and YAML.
		method = stringBytes(methodText(v))
	}
	s, err := m.reflectKind(v, depth, method > 0)
	if err != nil {
		return shape{}, err
	}
	s.bytes = addSat(s.bytes, method)
	return s, m.over(s)
}

// methodText is the String or Error of a value, "" for a nil pointer or a
// value of an unexported field.
func methodText(v reflect.Value) string {
	if !v.CanInterface() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return ""
	}
	switch x := v.Interface().(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	return ""
}

func (m *measurer) reflectKind(v reflect.Value, depth int, hasMethod bool) (shape, error) {
	switch v.Kind() {
	case reflect.String:
		return leaf(stringBytes(v.String())), nil
	case reflect.Bool:
		return leaf(5), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return leaf(24), nil
	case reflect.Complex64, reflect.Complex128:
		return leaf(48), nil
	case reflect.Interface:
		if v.IsNil() {
			return leaf(5), nil
		}
		return m.reflectValue(v.Elem(), depth)
	case reflect.Pointer:
		return m.pointer(v, depth, hasMethod)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		m.addr = m.addr || !hasMethod
		return leaf(24), nil
	case reflect.Struct:
		s := shape{bytes: 2}
		for i := range v.NumField() {
			es, err := m.reflectValue(v.Field(i), depth+1)
			if err := m.child(&s, int64(len(v.Type().Field(i).Name)), es, err); err != nil {
				return shape{}, err
			}
		}
		return s, nil
	case reflect.Map, reflect.Slice, reflect.Array:
		return m.reflectContainer(v, depth)
	}
	return leaf(24), nil
}

// pointer measures what a pointer points to. fmt prints a pointer as its
// address, except one with a String or Error method, and one at the top
// level pointing to a struct, array, slice or map (as &{...}).
func (m *measurer) pointer(v reflect.Value, depth int, hasMethod bool) (shape, error) {
	if v.IsNil() {
		return leaf(5), nil
	}
	if !hasMethod {
		switch v.Elem().Kind() {
		case reflect.Struct, reflect.Array, reflect.Slice, reflect.Map:
			m.addr = m.addr || depth > 0
		default:
			m.addr = true
		}
	}
	return m.container(memoKey{v.Pointer(), 1, v.Type()}, depth, func(s *shape) error {
		es, err := m.reflectValue(v.Elem(), depth+1)
		if err == nil {
			*s = es
		}
		return err
	})
}

func (m *measurer) reflectContainer(v reflect.Value, depth int) (shape, error) {
	if v.Len() == 0 {
		return leaf(5), nil
	}
	if v.Kind() != reflect.Map && v.Type().Elem().Kind() == reflect.Uint8 {
		return leaf(mulSat(int64(v.Len()), 4)), nil // fmt prints []byte as [104 105 ...]
	}
	walk := func(s *shape) error {
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				ks, err := m.reflectValue(it.Key(), depth+1)
				if err != nil {
					return err
				}
				es, err := m.reflectValue(it.Value(), depth+1)
				if err := m.child(s, ks.bytes, es, err); err != nil {
					return err
				}
			}
			return nil
		}
		for i := range v.Len() {
			es, err := m.reflectValue(v.Index(i), depth+1)
			if err := m.child(s, 0, es, err); err != nil {
				return err
			}
		}
		return nil
	}
	if v.Kind() == reflect.Array {
		s := shape{bytes: 2}
		return s, walk(&s)
	}
	return m.container(memoKey{v.Pointer(), v.Len(), v.Type()}, depth, walk)
}
