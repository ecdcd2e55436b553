package flags

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Values are the values a command takes on its command line, as
// `helm template` takes them: files (--values, merged in order, later
// files winning key by key), then --set and --set-string assignments, in
// order.
type Values struct {
	files []string
	// sets holds every --set and --set-string, in the order given.
	sets []setFlag
}

// setFlag is one --set (typed) or --set-string expression.
type setFlag struct {
	expr  string
	typed bool
}

// maxSetIndex bounds a list index in --set (a[N]=x makes N+1 items).
const maxSetIndex = 10000

// Add adds --set and --set-string to fl, and --values unless the command
// reads its values files under another flag (lint's -f).
func (v *Values) Add(fl *pflag.FlagSet, withValues bool) {
	if withValues {
		fl.StringArrayVar(&v.files, "values", nil, "values file (YAML), merged over the bundle's defaults; repeatable, later files win key by key")
	}
	fl.Var(&setValue{v, true}, "set", "set a value: a.b=c, list[0]=x, list={a,b}; comma-separated, repeatable; numbers, true, false and null are typed as Helm types them")
	fl.Var(&setValue{v, false}, "set-string", "set a value as a string: a.b=007; comma-separated, repeatable")
}

// Given reports whether any values flag was given.
func (v *Values) Given() bool { return len(v.files) > 0 || len(v.sets) > 0 }

// setValue is the pflag.Value of --set and --set-string: each use appends.
type setValue struct {
	v     *Values
	typed bool
}

func (s *setValue) String() string { return "" }
func (s *setValue) Type() string   { return "key=value" }
func (s *setValue) Set(expr string) error {
	// Parse now, for an error that names the flag at once.
	if err := applySet(map[string]any{}, expr, s.typed); err != nil {
		return err
	}
	s.v.sets = append(s.v.sets, setFlag{expr, s.typed})
	return nil
}

// Merged returns the values of the files and assignments, merged in
// order; nil when none was given.
func (v *Values) Merged() (map[string]any, error) {
	if !v.Given() {
		return nil, nil
	}
	out := map[string]any{}
	for _, path := range v.files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		mergeInto(out, m)
	}
	if err := v.Apply(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Apply applies the --set and --set-string assignments to dst, in order.
func (v *Values) Apply(dst map[string]any) error {
	for _, s := range v.sets {
		if err := applySet(dst, s.expr, s.typed); err != nil {
			return err
		}
	}
	return nil
}

// mergeInto merges src into dst: maps key by key, anything else replaced.
func mergeInto(dst, src map[string]any) {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
}

// applySet applies one --set expression: assignments key=value separated
// by commas, where a key is a dotted path whose parts may index a list
// (a.b[0].c), and a value is a scalar or a list {x,y}. A backslash makes
// the next character plain (a\.b=c sets the key "a.b"; x=a\,b the value
// "a,b"). typed makes true, false, null and integers what they say, as
// Helm's --set does (a leading zero keeps a string: 007); otherwise
// every value is a string.
func applySet(dst map[string]any, expr string, typed bool) error {
	for _, assign := range splitPlain(expr, ',') {
		if assign == "" {
			continue
		}
		parts := splitPlain(assign, '=')
		if len(parts) < 2 || parts[0] == "" {
			return fmt.Errorf("--set %q: %q is not key=value", expr, unescape(assign))
		}
		path, err := parsePath(parts[0])
		if err != nil {
			return fmt.Errorf("--set %q: %w", expr, err)
		}
		raw := strings.Join(parts[1:], "=")
		var val any
		if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
			items := []any{}
			for _, item := range splitPlain(raw[1:len(raw)-1], ';') {
				items = append(items, scalar(item, typed))
			}
			val = items
		} else {
			val = scalar(raw, typed)
		}
		if err := setPath(dst, path, val); err != nil {
			return fmt.Errorf("--set %q: %s: %w", expr, unescape(parts[0]), err)
		}
	}
	return nil
}

// splitPlain splits s at each sep that no backslash escapes and, for
// commas, that is outside a {list}; the parts keep their escapes. A list
// literal's commas become ';' inside its braces so its items can be
// split again (an escaped ';' stays escaped).
func splitPlain(s string, sep byte) []string {
	var parts []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
			continue
		case sep == ',' && c == '{':
			depth++
		case sep == ',' && c == '}' && depth > 0:
			depth--
		case c == sep && depth == 0:
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		case sep == ',' && c == ',' && depth > 0:
			cur.WriteByte(';')
			continue
		case sep == ',' && c == ';' && depth > 0:
			cur.WriteString(`\;`)
			continue
		}
		cur.WriteByte(c)
	}
	return append(parts, cur.String())
}

// unescape drops the backslashes that make the next character plain.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// scalar types one value, as Helm's --set does when typed.
func scalar(raw string, typed bool) any {
	s := unescape(raw)
	if !typed {
		return s
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if len(s) > 1 && (s[0] == '0' || strings.HasPrefix(s, "-0")) {
		return s
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return s
}

// step is one part of a --set key: a map key, or a list index.
type step struct {
	key   string
	index int // with key "": the list index
}

// parsePath reads a key such as a.b[0].c\.d into its steps.
func parsePath(key string) ([]step, error) {
	var steps []step
	for _, part := range splitPlain(key, '.') {
		name, rest := part, ""
		if i := plainIndex(part, '['); i >= 0 {
			name, rest = part[:i], part[i:]
		}
		if name == "" {
			return nil, fmt.Errorf("key %q has an empty part", unescape(key))
		}
		steps = append(steps, step{key: unescape(name)})
		for rest != "" {
			end := strings.IndexByte(rest, ']')
			if !strings.HasPrefix(rest, "[") || end < 0 {
				return nil, fmt.Errorf("key %q: want name[N]", unescape(key))
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("key %q: list index %q is not a number", unescape(key), rest[1:end])
			}
			if n > maxSetIndex {
				return nil, fmt.Errorf("key %q: list index %d is over %d", unescape(key), n, maxSetIndex)
			}
			steps = append(steps, step{index: n})
			rest = rest[end+1:]
		}
	}
	return steps, nil
}

// plainIndex is the index of the first c in s that no backslash escapes.
func plainIndex(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case c:
			return i
		}
	}
	return -1
}

// setPath sets val at path in m, making the maps and lists on the way.
func setPath(m map[string]any, path []step, val any) error {
	var cur any = m
	set := func(v any) {} // writes the current container back to its parent
	for i, s := range path {
		last := i == len(path)-1
		if s.key != "" {
			cm, ok := cur.(map[string]any)
			if !ok {
				if cur != nil {
					return fmt.Errorf("%s is not a map", s.key)
				}
				cm = map[string]any{}
				set(cm)
			}
			if last {
				cm[s.key] = val
				return nil
			}
			key := s.key
			cur, set = cm[key], func(v any) { cm[key] = v }
			continue
		}
		list, ok := cur.([]any)
		if !ok && cur != nil {
			return fmt.Errorf("[%d] indexes a value that is not a list", s.index)
		}
		for len(list) <= s.index {
			list = append(list, nil)
		}
		set(list)
		if last {
			list[s.index] = val
			return nil
		}
		idx := s.index
		cur, set = list[idx], func(v any) { list[idx] = v }
	}
	return nil
}
