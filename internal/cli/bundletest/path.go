package bundletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxPathLength bounds a field path's source, in bytes.
const maxPathLength = 1024

// step is one step of a field path: a map key, a list index, or the
// first list item whose field matchKey is matchValue.
type step struct {
	key        string
	index      int
	matchKey   string
	matchValue string
	kind       stepKind
}

type stepKind int

const (
	stepKey stepKind = iota
	stepIndex
	stepMatch
)

// fieldPath is a parsed field path.
type fieldPath struct {
	source string
	steps  []step
}

func (p fieldPath) String() string { return p.source }

// parsePath reads a field path: names separated by dots, each followed
// by any number of brackets, [N] (a list index), [key=value] (the first
// list item whose field key is value) or ["key"] (a map key holding
// dots or brackets, in double or single quotes).
func parsePath(s string) (fieldPath, error) {
	switch {
	case s == "":
		return fieldPath{}, errors.New("empty")
	case len(s) > maxPathLength:
		return fieldPath{}, fmt.Errorf("longer than %d bytes", maxPathLength)
	}
	p := fieldPath{source: s}
	rest := s
	for {
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		name := rest[:end]
		rest = rest[end:]
		if name != "" {
			p.steps = append(p.steps, step{kind: stepKey, key: name})
		}
		brackets := 0
		for ; strings.HasPrefix(rest, "["); brackets++ {
			st, n, err := parseBracket(rest)
			if err != nil {
				return fieldPath{}, err
			}
			p.steps = append(p.steps, st)
			rest = rest[n:]
		}
		switch {
		case name == "" && brackets == 0:
			return fieldPath{}, errors.New("a name is empty (two dots, or a dot at an end)")
		case rest == "":
			return p, nil
		case rest[0] != '.':
			return fieldPath{}, fmt.Errorf("at %q: want . or [ after a bracket", rest)
		}
		rest = rest[1:]
		if rest == "" {
			return fieldPath{}, errors.New("a name is empty (two dots, or a dot at an end)")
		}
	}
}

// parseBracket reads the bracket s starts with and returns its step and
// length.
func parseBracket(s string) (step, int, error) {
	if len(s) > 1 && (s[1] == '"' || s[1] == '\'') {
		q := s[1]
		end := strings.IndexByte(s[2:], q)
		if end < 0 || len(s) < end+4 || s[end+3] != ']' {
			return step{}, 0, fmt.Errorf("at %q: want [%ckey%c]", s, q, q)
		}
		return step{kind: stepKey, key: s[2 : end+2]}, end + 4, nil
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return step{}, 0, fmt.Errorf("at %q: [ without ]", s)
	}
	inner := s[1:end]
	if k, v, ok := strings.Cut(inner, "="); ok {
		if k == "" {
			return step{}, 0, fmt.Errorf("at %q: want [key=value]", s)
		}
		return step{kind: stepMatch, matchKey: k, matchValue: v}, end + 1, nil
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 {
		return step{}, 0, fmt.Errorf("at %q: want [N], [key=value] or [\"key\"]", s)
	}
	return step{kind: stepIndex, index: n}, end + 1, nil
}

// get returns the value at p in v and whether it is there; when it is
// not, why says where the path stops ("spec.template is not a list").
func (p fieldPath) get(v any) (val any, found bool, why string) {
	cur := v
	for i, st := range p.steps {
		at := p.prefix(i)
		switch st.kind {
		case stepKey:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false, describeNotA(at, cur, "an object")
			}
			if cur, ok = m[st.key]; !ok {
				return nil, false, ""
			}
		case stepIndex:
			l, ok := cur.([]any)
			if !ok {
				return nil, false, describeNotA(at, cur, "a list")
			}
			if st.index >= len(l) {
				return nil, false, fmt.Sprintf("%s has %s", at, plural(len(l), "item"))
			}
			cur = l[st.index]
		case stepMatch:
			l, ok := cur.([]any)
			if !ok {
				return nil, false, describeNotA(at, cur, "a list")
			}
			if cur, ok = matchItem(l, st); !ok {
				return nil, false, fmt.Sprintf("%s has no item with %s=%s", at, st.matchKey, st.matchValue)
			}
		}
	}
	return cur, true, ""
}

// prefix is the path's source up to step i, for messages.
func (p fieldPath) prefix(i int) string {
	var b strings.Builder
	for _, st := range p.steps[:i] {
		switch st.kind {
		case stepKey:
			if strings.ContainsAny(st.key, ".[]") {
				fmt.Fprintf(&b, "[%q]", st.key)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(st.key)
		case stepIndex:
			fmt.Fprintf(&b, "[%d]", st.index)
		case stepMatch:
			fmt.Fprintf(&b, "[%s=%s]", st.matchKey, st.matchValue)
		}
	}
	if b.Len() == 0 {
		return "the object"
	}
	return b.String()
}

// matchItem returns the first item of l whose field st.matchKey, a
// scalar, prints as st.matchValue.
func matchItem(l []any, st step) (any, bool) {
	for _, item := range l {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if v, ok := m[st.matchKey]; ok && scalarText(v) == st.matchValue {
			return item, true
		}
	}
	return nil, false
}

// scalarText is a scalar's text: a string as it is, a number or a
// boolean as JSON writes it; "" for anything else.
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool, int64, int, float64, json.Number:
		data, _ := json.Marshal(v)
		return string(data)
	}
	return ""
}

// describeNotA says that the value at the path prefix is not what a step needs.
func describeNotA(at string, v any, want string) string {
	if v == nil {
		return fmt.Sprintf("%s is null, not %s", at, want)
	}
	return fmt.Sprintf("%s is %s, not %s", at, typeName(v), want)
}

// typeName names a JSON value's type.
func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
