package funcs

import (
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"path"
	"sync"

	"github.com/Masterminds/sprig/v3"
	"github.com/stencil-dev/stencil/templates/dates"
	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"

	"text/template"
)

// The table stays: it is the allow-list (env and expandenv refused,
// getHostByName answering ""; now and ago only where a bundle opts in; lookup and the
// generators bound by package templates to its caller's answers),
// which no process bound gives.
//
// A render's functions are bound to its guard when the render starts
// (Map), so the table of how to bind each one is built once per
// process (per allowNondeterministic), and binding is one small closure
// per function that makes strings, lists or maps. The others (numbers,
// booleans, and functions returning one of their arguments, such as
// default or get) are the same values in every render.

// binder binds one function to a render's guard (nil at parse time).
type binder func(g *Guard) any

// static is a function that needs no guard.
func static(fn any) binder { return func(*Guard) any { return fn } }

var funcTables = [2]func() map[string]binder{
	sync.OnceValue(func() map[string]binder { return buildFuncTable(false) }),
	sync.OnceValue(func() map[string]binder { return buildFuncTable(true) }),
}

// Map returns the functions of sprig and Helm that templates may
// call (every one but include and tpl), bound to g. docs/templates.md
// ("Functions") lists them.
func Map(g *Guard, allowNondeterministic bool) template.FuncMap {
	table := funcTables[0]()
	if allowNondeterministic {
		table = funcTables[1]()
	}
	f := make(template.FuncMap, len(table)+2)
	for name, bind := range table {
		f[name] = bind(g)
	}
	return f
}

// passThrough are sprig functions that return one of their arguments, or
// a value inside one: they allocate nothing to charge.
var passThrough = []string{
	"default", "coalesce", "ternary", "first", "mustFirst", "last", "mustLast", "get", "dig",
	"slice", "mustSlice", "plural", "unset",
}

// costly are the functions counted by MaxCostlyCalls.
var costly = []string{
	"derivePassword", "bcrypt", "htpasswd", "genPrivateKey", "genCA", "genCAWithKey",
	"genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey",
}

func buildFuncTable(allowNondeterministic bool) map[string]binder {
	s := sprig.GenericFuncMap()
	t := make(map[string]binder, len(s)+16)
	for name, fn := range s {
		t[name] = adapt(name, fn)
	}
	for _, name := range passThrough {
		t[name] = static(s[name])
	}
	t["hello"], t["unixEpoch"] = static(s["hello"]), static(s["unixEpoch"]) // a few bytes
	for _, name := range costly {
		t[name] = costlyFunc(name, s[name])
	}
	addStrings(t, s)
	addValues(t, s)
	addSerializers(t)
	for name, fn := range dates.Funcs(allowNondeterministic) {
		t[name] = static(fn)
	}
	// The os* functions are the path ones: as on Linux, where the
	// controller runs, whatever the machine of a `stencil render`.
	for name, fn := range map[string]any{"osBase": path.Base, "osClean": path.Clean, "osDir": path.Dir, "osExt": path.Ext, "osIsAbs": path.IsAbs} {
		t[name] = static(fn)
	}
	t["date_modify"] = static(s["date_modify"]) // deterministic: it shifts a given time
	for name, fn := range dates.DurationFuncs() {
		t[name] = static(fn) // numbers and durations: nothing to charge
	}
	t["required"] = static(required)
	t["fail"] = static(func(msg string) (string, error) { return "", fmt.Errorf("%s", msg) })
	// Bound by package templates to the render's answers (package
	// templates/lookup); outside a render, lookup answers nothing.
	t["lookup"] = static(func(...any) (map[string]any, error) {
		return nil, fmt.Errorf("lookup: not in a render")
	})
	for _, name := range denied {
		t[name] = static(refused(name, "is not allowed in stencil templates: templates cannot read the environment or the network"))
	}
	// As Helm's without --enable-dns, the default of helm template and
	// helm install: "" for every name, with no DNS query (which would be
	// a channel out of the render), so charts that call it render as
	// Helm renders them.
	t["getHostByName"] = static(func(string) string { return "" })
	addGenerators(t, s)
	if !allowNondeterministic {
		for _, name := range nondeterministic {
			t[name] = static(refusedNondeterministicFunc(name))
		}
	}
	return t
}

// refusedNondeterministicFunc is a nondeterministic function a bundle did
// not allow (BindNondeterministic lets a Helm test hook call it).
func refusedNondeterministicFunc(name string) func(...any) (any, error) {
	return func(...any) (any, error) {
		return nil, &nondeterministicError{msg: fmt.Sprintf("function %q gives a different result on every render, so every reconcile would rewrite (or rotate) what it makes; set allowNondeterministic: true on the Bundle to allow it", name)}
	}
}

func refused(name, why string) func(...any) (any, error) {
	return func(...any) (any, error) { return nil, fmt.Errorf("function %q %s", name, why) }
}

// addStrings binds the functions that build strings (guard_strings.go).
func addStrings(t map[string]binder, s map[string]any) {
	t["repeat"] = func(g *Guard) any { return g.repeat }
	t["indent"] = func(g *Guard) any { return g.indent("indent", "") }
	t["nindent"] = func(g *Guard) any { return g.indent("nindent", "\n") }
	wrap := s["wrap"].(func(int, string) string)
	t["wrap"] = func(g *Guard) any {
		return func(width int, str string) (string, error) {
			if err := g.wrapSize("wrap", width, "\n", str); err != nil {
				return "", err
			}
			return wrap(width, str), nil
		}
	}
	wrapWith := s["wrapWith"].(func(int, string, string) string)
	t["wrapWith"] = func(g *Guard) any {
		return func(width int, sep, str string) (string, error) {
			if err := g.wrapSize("wrapWith", width, sep, str); err != nil {
				return "", err
			}
			return wrapWith(width, sep, str), nil
		}
	}
	t["replace"] = func(g *Guard) any { return g.replace }
	t["substr"] = func(g *Guard) any { return g.substr }
	for _, name := range []string{"abbrev", "trunc"} {
		f := s[name].(func(int, string) string)
		t[name] = func(g *Guard) any {
			return func(n int, str string) (string, error) {
				if name == "abbrev" && n < 0 {
					return "", funcError(name, "the width must not be negative, got %d", n)
				}
				return f(n, str), nil // no larger than str
			}
		}
	}
	t["b64enc"] = func(g *Guard) any { return g.encoder("b64enc", base64.StdEncoding) }
	t["b32enc"] = func(g *Guard) any { return g.encoder("b32enc", base32.StdEncoding) }
	t["seq"] = func(g *Guard) any { return g.seq }
	addPrinters(t, s)
	addSplits(t, s)
}

// addPrinters binds the functions that print values with fmt.
func addPrinters(t map[string]binder, s map[string]any) {
	quote, squote, cat := s["quote"].(func(...any) string), s["squote"].(func(...any) string), s["cat"].(func(...any) string)
	t["quote"] = func(g *Guard) any { return g.printer("quote", 4, quote) }
	t["squote"] = func(g *Guard) any { return g.printer("squote", 1, squote) }
	t["cat"] = func(g *Guard) any { return g.printer("cat", 1, cat) }
	t["print"] = func(g *Guard) any { return g.printer("print", 1, fmt.Sprint) }
	t["println"] = func(g *Guard) any { return g.printer("println", 1, fmt.Sprintln) }
	t["printf"] = func(g *Guard) any { return g.printf }
	t["html"] = func(g *Guard) any { return g.printer("html", 6, template.HTMLEscaper) }
	t["js"] = func(g *Guard) any { return g.printer("js", 6, template.JSEscaper) }
	t["urlquery"] = func(g *Guard) any { return g.printer("urlquery", 3, template.URLQueryEscaper) }
	toString := s["toString"].(func(any) string)
	t["toString"] = func(g *Guard) any {
		p := g.printer("toString", 1, func(a ...any) string { return toString(a[0]) })
		return func(v any) (string, error) { return p(v) }
	}
	t["toStrings"] = func(g *Guard) any { return g.toStrings("toStrings", s["toStrings"].(func(any) []string)) }
	t["sortAlpha"] = func(g *Guard) any { return g.toStrings("sortAlpha", s["sortAlpha"].(func(any) []string)) }
	t["join"] = func(g *Guard) any { return g.join(s["join"].(func(string, any) string)) }
}

// addSplits binds the functions that split strings, with or without
// regular expressions.
func addSplits(t map[string]binder, s map[string]any) {
	splitList, split, splitn := s["splitList"].(func(string, string) []string), s["split"].(func(string, string) map[string]string), s["splitn"].(func(string, int, string) map[string]string)
	t["splitList"] = func(g *Guard) any {
		return func(sep, str string) ([]string, error) {
			if err := g.splitCount("splitList", sep, str, -1); err != nil {
				return nil, err
			}
			return splitList(sep, str), nil
		}
	}
	t["split"] = func(g *Guard) any {
		return func(sep, str string) (map[string]string, error) {
			if err := g.splitCount("split", sep, str, -1); err != nil {
				return nil, err
			}
			return split(sep, str), nil
		}
	}
	t["splitn"] = func(g *Guard) any {
		return func(sep string, n int, str string) (map[string]string, error) {
			if err := g.splitCount("splitn", sep, str, n); err != nil {
				return nil, err
			}
			return splitn(sep, n, str), nil
		}
	}
	for _, name := range []string{"regexReplaceAll", "mustRegexReplaceAll"} {
		t[name] = func(g *Guard) any { return g.regexReplace(name, true) }
	}
	for _, name := range []string{"regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"} {
		t[name] = func(g *Guard) any { return g.regexReplace(name, false) }
	}
	for _, name := range []string{"regexFindAll", "mustRegexFindAll"} {
		t[name] = func(g *Guard) any { return g.regexList(name, false) }
	}
	for _, name := range []string{"regexSplit", "mustRegexSplit"} {
		t[name] = func(g *Guard) any { return g.regexList(name, true) }
	}
	t["regexFind"] = static(regexFind("regexFind"))
	t["mustRegexFind"] = static(regexFind("mustRegexFind"))
	t["mustRegexMatch"] = static(mustRegexMatch)
}

// addValues binds the functions that build or modify lists and maps
// (guard_lists.go, guard_cycles.go).
func addValues(t map[string]binder, s map[string]any) {
	t["until"] = func(g *Guard) any {
		return func(n int) ([]int, error) {
			step := 1
			if n < 0 {
				step = -1
			}
			return g.untilStep("until", 0, n, step)
		}
	}
	t["untilStep"] = func(g *Guard) any {
		return func(start, stop, step int) ([]int, error) { return g.untilStep("untilStep", start, stop, step) }
	}
	t["list"] = func(g *Guard) any { return g.list }
	t["tuple"] = t["list"]
	t["dict"] = func(g *Guard) any { return g.dict(s["dict"].(func(...any) map[string]any)) }
	t["set"] = func(g *Guard) any { return g.set }
	lenient := func(f func(map[string]any, ...map[string]any) any) func(map[string]any, map[string]any) (any, error) {
		return func(dst, src map[string]any) (any, error) { return f(dst, src), nil }
	}
	must := func(f func(map[string]any, ...map[string]any) (any, error)) func(map[string]any, map[string]any) (any, error) {
		return func(dst, src map[string]any) (any, error) { return f(dst, src) }
	}
	merges := map[string]func(map[string]any, map[string]any) (any, error){
		"merge":              lenient(s["merge"].(func(map[string]any, ...map[string]any) any)),
		"mergeOverwrite":     lenient(s["mergeOverwrite"].(func(map[string]any, ...map[string]any) any)),
		"mustMerge":          must(s["mustMerge"].(func(map[string]any, ...map[string]any) (any, error))),
		"mustMergeOverwrite": must(s["mustMergeOverwrite"].(func(map[string]any, ...map[string]any) (any, error))),
	}
	for name, f := range merges {
		t[name] = func(g *Guard) any { return g.mergeFunc(name, f) }
	}
	push, mustPush := s["push"].(func(any, any) []any), s["mustPush"].(func(any, any) ([]any, error))
	prepend, mustPrepend := s["prepend"].(func(any, any) []any), s["mustPrepend"].(func(any, any) ([]any, error))
	noErr := func(f func(any, any) []any) func(any, any) ([]any, error) {
		return func(l, v any) ([]any, error) { return f(l, v), nil }
	}
	for name, f := range map[string]func(any, any) ([]any, error){
		"append": noErr(push), "push": noErr(push), "mustAppend": mustPush, "mustPush": mustPush,
		"prepend": noErr(prepend), "mustPrepend": mustPrepend,
	} {
		t[name] = func(g *Guard) any { return g.grow(name, f) }
	}
	t["concat"] = func(g *Guard) any { return g.concat(s["concat"].(func(...any) any)) }
	chunk := s["chunk"].(func(int, any) [][]any)
	t["chunk"] = func(g *Guard) any {
		return g.chunk("chunk", func(n int, l any) ([][]any, error) { return chunk(n, l), nil })
	}
	t["mustChunk"] = func(g *Guard) any { return g.chunk("mustChunk", s["mustChunk"].(func(int, any) ([][]any, error))) }
	t["uniq"] = func(g *Guard) any { return g.uniq("uniq") }
	t["mustUniq"] = func(g *Guard) any { return g.uniq("mustUniq") }
	t["keys"] = func(g *Guard) any { return g.keys }
	t["values"] = func(g *Guard) any { return g.values }
	deepCopy := s["deepCopy"].(func(any) any)
	t["deepCopy"] = func(g *Guard) any {
		return g.deepCopy("deepCopy", func(v any) (any, error) { return deepCopy(v), nil })
	}
	t["mustDeepCopy"] = func(g *Guard) any { return g.deepCopy("mustDeepCopy", s["mustDeepCopy"].(func(any) (any, error))) }
}

// addSerializers binds Helm's and sprig's YAML, JSON and TOML functions
// (guard_yaml.go, guard_toml.go).
func addSerializers(t map[string]binder) {
	// toYaml, toJson and toPrettyJson write "" for a value they cannot
	// serialize (a NaN); sprig's toRawJson fails, as the must forms do.
	for name, marshal := range map[string]func(any) (string, error){
		"toYaml": lenient(strictyaml.Marshal), "toJson": lenient(marshalJSON), "toPrettyJson": lenient(marshalPrettyJSON),
		"toRawJson": marshalRawJSON, "mustToJson": marshalJSON, "mustToPrettyJson": marshalPrettyJSON,
		"mustToRawJson": marshalRawJSON, "mustToYaml": strictyaml.Marshal,
	} {
		t[name] = func(g *Guard) any { return g.serializer(name, marshal) }
	}
	// Helm's toYamlPretty writes the value itself (not its JSON) with
	// go.yaml.in/yaml/v3, indented by 2, and writes "" when that fails.
	t["toYamlPretty"] = func(g *Guard) any {
		return g.streamed("toYamlPretty", encodePrettyYAML, trimNewline, func(error) (string, error) { return "", nil })
	}
	addTOML(t)
	t["fromYaml"] = func(g *Guard) any { return g.parse("fromYaml", true, intoMap("fromYaml")) }
	t["fromYamlArray"] = func(g *Guard) any { return g.parse("fromYamlArray", true, intoArray("fromYamlArray")) }
	t["fromJson"] = func(g *Guard) any { return g.parse("fromJson", false, intoMap("fromJson")) }
	t["fromJsonArray"] = func(g *Guard) any { return g.parse("fromJsonArray", false, intoArray("fromJsonArray")) }
	t["mustFromJson"] = func(g *Guard) any { return g.parse("mustFromJson", false, intoAny) }
}

// addNondeterministic binds the nondeterministic functions a bundle
// allowed, still bounded: rand* build count characters, and the key and
// certificate generators are costly.
// addGenerators binds the random string functions, charged for what they
// make (package templates/generators keeps their values for a set).
func addGenerators(t map[string]binder, s map[string]any) {
	for _, name := range []string{"randAlphaNum", "randAlpha", "randAscii", "randNumeric"} {
		f := s[name].(func(int) string)
		t[name] = func(g *Guard) any {
			return func(count int) (string, error) {
				if err := g.take(name, int64(max(count, 0))); err != nil {
					return "", err
				}
				return f(count), nil
			}
		}
	}
	randBytes := s["randBytes"].(func(int) (string, error))
	t["randBytes"] = func(g *Guard) any {
		return func(count int) (string, error) {
			if err := g.take("randBytes", measure.MulSat(int64(max(count, 0)), 2)); err != nil {
				return "", err
			}
			return randBytes(count)
		}
	}
}

// denied are sprig functions that read the process environment, which
// Helm's engine does not have either (getHostByName, which Helm has, is
// answered "" instead).
var denied = []string{"env", "expandenv"}

func required(msg string, v any) (any, error) {
	if v == nil {
		return nil, fmt.Errorf("%s", msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, fmt.Errorf("%s", msg)
	}
	return v, nil
}
