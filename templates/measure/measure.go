package measure

import (
	"fmt"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/fault"
)

// Shape is what measure learns of a value.
type Shape struct {
	// Bytes bounds the value's size printed by fmt or serialized as JSON or
	// YAML (YAML's indentation included): strings count 6 Bytes for each
	// byte JSON may escape.
	Bytes int64
	// Lines is the value's Lines as block YAML, for its parent's indentation.
	Lines int64
	// Items counts scalars and map keys: what fmt applies a verb's width
	// to, and about what a copy allocates.
	Items int64
	// Height is how deeply maps and lists nest in it: 0 for a scalar.
	Height int
}

// memoKey identifies a map or list in memory.
type memoKey struct {
	p uintptr
	n int
	t reflect.Type
}

// Measurer measures values for one function call.
type Measurer struct {
	fn    string
	limit int64
	memo  map[memoKey]Shape
	// Addr is set when the value holds something fmt prints as a memory
	// address, different on every run: a pointer below the top level
	// without a String method, a func or a channel.
	Addr bool
	// Deep is set when the measure failed on MaxValueDepth, not the limit.
	Deep bool
}

// New returns a measurer for one call of the function fn (named in its
// errors) that refuses values printing larger than limit bytes.
func New(fn string, limit int64) *Measurer {
	return &Measurer{fn: fn, limit: limit}
}

// Measure measures v, checking MaxValueDepth and the measurer's limit.
func (m *Measurer) Measure(v any) (Shape, error) { return m.value(v, 0) }

func (m *Measurer) tooDeep() error {
	m.Deep = true
	return &fault.RenderError{Reason: fault.ReasonTooLarge,
		Msg: fmt.Sprintf("%s: the value nests more than %d deep (MaxValueDepth)", m.fn, MaxValueDepth)}
}

func (m *Measurer) over(s Shape) error {
	if s.Bytes > m.limit {
		return &fault.RenderError{Reason: fault.ReasonTooLarge,
			Msg: fmt.Sprintf("%s: the value would print larger than the %d bytes left of what its functions may produce in one render (MaxFunctionBytes)", m.fn, m.limit)}
	}
	return nil
}

// Leaf is the shape of a scalar that prints in n bytes.
func Leaf(n int64) Shape { return Shape{Bytes: n, Items: 1} }

// StringBytes bounds a string's size escaped for JSON (\u0000 is 6 bytes),
// quoted by fmt's %q or by YAML.
func StringBytes(s string) int64 {
	special := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			special++
		}
	}
	return AddSat(int64(len(s)), 2, MulSat(int64(special), 5))
}

func (m *Measurer) value(v any, depth int) (Shape, error) {
	if depth > MaxValueDepth {
		return Shape{}, m.tooDeep()
	}
	switch x := v.(type) {
	case nil:
		return Leaf(5), nil
	case string:
		return Leaf(StringBytes(x)), nil
	case bool:
		return Leaf(5), nil
	case int, int64, float64:
		return Leaf(24), nil
	case time.Time:
		return Leaf(64), nil
	case map[string]any:
		if len(x) == 0 {
			return Leaf(5), nil
		}
		return m.container(memoKey{reflect.ValueOf(x).Pointer(), len(x), mapStringAnyType}, depth, func(s *Shape) error {
			for k, e := range x {
				es, err := m.value(e, depth+1)
				if err := m.child(s, StringBytes(k), es, err); err != nil {
					return err
				}
			}
			return nil
		})
	case []any:
		if len(x) == 0 {
			return Leaf(5), nil
		}
		return m.container(memoKey{reflect.ValueOf(x).Pointer(), len(x), sliceAnyType}, depth, func(s *Shape) error {
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
func (m *Measurer) container(key memoKey, depth int, walk func(s *Shape) error) (Shape, error) {
	if s, ok := m.memo[key]; ok {
		if depth+s.Height > MaxValueDepth {
			return Shape{}, m.tooDeep()
		}
		return s, nil
	}
	s := Shape{Bytes: 2}
	if err := walk(&s); err != nil {
		return Shape{}, err
	}
	if m.memo == nil {
		m.memo = map[memoKey]Shape{}
	}
	m.memo[key] = s
	return s, nil
}

// child adds one entry of a container (key bytes 0 for a list element) to
// its shape and checks the limit.
func (m *Measurer) child(s *Shape, key int64, e Shape, err error) error {
	if err != nil {
		return err
	}
	s.Bytes = AddSat(s.Bytes, key, 3, e.Bytes, MulSat(2, e.Lines))
	s.Lines = AddSat(s.Lines, 1, e.Lines)
	s.Items = AddSat(s.Items, 1, e.Items)
	s.Height = max(s.Height, e.Height+1)
	return m.over(*s)
}

// reflectValue measures the other values templates may hold: data structs
// (.Composition, .Capabilities, ...), typed maps and lists, pointers.
func (m *Measurer) reflectValue(v reflect.Value, depth int) (Shape, error) {
	if depth > MaxValueDepth {
		return Shape{}, m.tooDeep()
	}
	if !v.IsValid() {
		return Leaf(5), nil
	}
	var method int64
	if t := v.Type(); t.Implements(stringerType) || t.Implements(errorType) {
		// fmt prints it with its String or Error method, at any depth:
		// count that, and the fields too, for JSON and YAML.
		method = StringBytes(methodText(v))
	}
	s, err := m.reflectKind(v, depth, method > 0)
	if err != nil {
		return Shape{}, err
	}
	s.Bytes = AddSat(s.Bytes, method)
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

func (m *Measurer) reflectKind(v reflect.Value, depth int, hasMethod bool) (Shape, error) {
	switch v.Kind() {
	case reflect.String:
		return Leaf(StringBytes(v.String())), nil
	case reflect.Bool:
		return Leaf(5), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return Leaf(24), nil
	case reflect.Complex64, reflect.Complex128:
		return Leaf(48), nil
	case reflect.Interface:
		if v.IsNil() {
			return Leaf(5), nil
		}
		return m.reflectValue(v.Elem(), depth)
	case reflect.Pointer:
		return m.pointer(v, depth, hasMethod)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		m.Addr = m.Addr || !hasMethod
		return Leaf(24), nil
	case reflect.Struct:
		s := Shape{Bytes: 2}
		for i := range v.NumField() {
			es, err := m.reflectValue(v.Field(i), depth+1)
			if err := m.child(&s, int64(len(v.Type().Field(i).Name)), es, err); err != nil {
				return Shape{}, err
			}
		}
		return s, nil
	case reflect.Map, reflect.Slice, reflect.Array:
		return m.reflectContainer(v, depth)
	}
	return Leaf(24), nil
}

// pointer measures what a pointer points to. fmt prints a pointer as its
// address, except one with a String or Error method, and one at the top
// level pointing to a struct, array, slice or map (as &{...}).
func (m *Measurer) pointer(v reflect.Value, depth int, hasMethod bool) (Shape, error) {
	if v.IsNil() {
		return Leaf(5), nil
	}
	if !hasMethod {
		switch v.Elem().Kind() {
		case reflect.Struct, reflect.Array, reflect.Slice, reflect.Map:
			m.Addr = m.Addr || depth > 0
		default:
			m.Addr = true
		}
	}
	return m.container(memoKey{v.Pointer(), 1, v.Type()}, depth, func(s *Shape) error {
		es, err := m.reflectValue(v.Elem(), depth+1)
		if err == nil {
			*s = es
		}
		return err
	})
}

func (m *Measurer) reflectContainer(v reflect.Value, depth int) (Shape, error) {
	if v.Len() == 0 {
		return Leaf(5), nil
	}
	if v.Kind() != reflect.Map && v.Type().Elem().Kind() == reflect.Uint8 {
		return Leaf(MulSat(int64(v.Len()), 4)), nil // fmt prints []byte as [104 105 ...]
	}
	walk := func(s *Shape) error {
		if v.Kind() == reflect.Map {
			for it := v.MapRange(); it.Next(); {
				ks, err := m.reflectValue(it.Key(), depth+1)
				if err != nil {
					return err
				}
				es, err := m.reflectValue(it.Value(), depth+1)
				if err := m.child(s, ks.Bytes, es, err); err != nil {
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
		s := Shape{Bytes: 2}
		return s, walk(&s)
	}
	return m.container(memoKey{v.Pointer(), v.Len(), v.Type()}, depth, walk)
}
