package conversion

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// orderedAdapter presents the document to CEL: json.Numbers as
// integers (or doubles), and maps with their keys in sorted order, so that an expression iterating a map (a map of ports
// to a list) gives the same result every time, as a conversion must:
// Go's maps iterate in random order.
type orderedAdapter struct{ base types.Adapter }

// NativeToValue implements types.Adapter.
func (a orderedAdapter) NativeToValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		return orderedMap{Mapper: types.NewStringInterfaceMap(a, v), m: v}
	case []any:
		return types.NewDynamicList(a, v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return types.Int(i)
		}
		f, err := v.Float64()
		if err != nil {
			return types.NewErr("%q is not a number", string(v))
		}
		return types.Double(f)
	}
	return a.base.NativeToValue(v)
}

// orderedMap is a map whose iteration is in key order.
type orderedMap struct {
	traits.Mapper
	m map[string]any
}

// Iterator implements traits.Iterable: the keys, sorted.
func (o orderedMap) Iterator() traits.Iterator {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return &keyIterator{keys: keys}
}

// keyIterator iterates a list of keys.
type keyIterator struct {
	keys []string
	i    int
}

func (*keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("type conversion on iterators not supported")
}
func (*keyIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (*keyIterator) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (*keyIterator) Type() ref.Type                 { return types.IteratorType }
func (*keyIterator) Value() any                     { return nil }

// HasNext implements traits.Iterator.
func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

// Next implements traits.Iterator.
func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return nil
	}
	k := it.keys[it.i]
	it.i++
	return types.String(k)
}
