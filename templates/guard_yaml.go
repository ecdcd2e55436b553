package templates

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/templates/measure"
	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// This file parses and writes YAML and JSON for the templates, the
// values and the rendered output: strictly (a duplicate key is an error
// with its line, as kubectl), with aliases bounded, nesting bounded by
// MaxValueDepth, and messages that never quote the text parsed. It stays:
// strictness and scrubbed messages are no process bound's, and an alias
// bomb is an error at its line rather than a kill.

// yamlError is a YAML error reduced to its line (relative to the text
// parsed; 0 when unknown) and a message with what it quoted removed.
type yamlError struct {
	line int
	msg  string
}

func (e *yamlError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	return e.msg
}

var (
	yamlLineRE      = regexp.MustCompile(`line (\d+)`)
	yamlDuplicateRE = regexp.MustCompile(`line (\d+): key (.*) already set in map`)
	yamlQuotedRE    = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`|'[^']*'")
	yamlPrefixRE    = regexp.MustCompile(`^(error converting YAML to JSON: |error unmarshaling JSON: |while decoding JSON: )*(yaml: )?(unmarshal errors:\s*)?(line \d+: )?`)
)

// newYAMLError reduces err. A duplicate key keeps the key (up to 64
// bytes: keys are the document's structure); every other quoted part is
// dropped, since it may be a value.
func newYAMLError(err error) *yamlError {
	msg := err.Error()
	e := &yamlError{}
	if m := yamlDuplicateRE.FindStringSubmatch(msg); m != nil {
		e.line, _ = strconv.Atoi(m[1])
		key := m[2]
		if len(key) > 64 {
			key = key[:64] + "…"
		}
		e.msg = "duplicate key " + key
		return e
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.line, _ = strconv.Atoi(m[1])
	}
	if i := strings.Index(msg, ", key:"); i >= 0 { // sigs.k8s.io/yaml's unsupported key prints the value
		msg = msg[:i]
	}
	msg = yamlPrefixRE.ReplaceAllString(msg, "")
	e.msg = yamlQuotedRE.ReplaceAllString(msg, "…")
	if strings.Contains(msg, "excessive aliasing") {
		e.msg = "too many aliases (excessive aliasing)"
	}
	return e
}

// yamlToJSON converts one YAML document to JSON as the API machinery does
// (sigs.k8s.io/yaml), but strictly, and refusing aliases that expand to
// more than limit bytes or nest deeper than MaxValueDepth: go.yaml.in/yaml
// bounds the alias expansions it decodes by their ratio to the other
// nodes, not their size, so a few thousand aliases of a long string would
// still expand to gigabytes of JSON.
func yamlToJSON(doc []byte, limit int64) ([]byte, error) {
	if strings.Contains(string(doc), "*") { // an alias is *name
		var v any
		if err := yamlv2.Unmarshal(doc, &v); err != nil {
			return nil, newYAMLError(err)
		}
		if err := checkAliases(v, limit); err != nil {
			return nil, err
		}
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, newYAMLError(err)
	}
	return js, nil
}

// checkDepth refuses a parsed value nested deeper than MaxValueDepth,
// naming the path to the first place too deep, from root.
func checkDepth(v any, path string, depth int) (string, bool) {
	if depth > measure.MaxValueDepth {
		return path, false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if p, ok := checkDepth(e, path+"."+k, depth+1); !ok {
				return p, false
			}
		}
	case []any:
		for i, e := range x {
			if p, ok := checkDepth(e, path+"["+strconv.Itoa(i)+"]", depth+1); !ok {
				return p, false
			}
		}
	}
	return "", true
}

// parse wraps fromYaml, fromYamlArray, fromJson, fromJsonArray and
// mustFromJson: the text must fit the budget; what it parses to is
// measured (MaxValueDepth) and charged. As in Helm, fromYaml and fromJson
// put a syntax error in the result (its "Error" key; the message without
// what it quoted); a duplicate key, too many aliases and a value too deep
// or too large are errors of the render.
func (g *guard) parse(fn string, isYAML bool, into func(js []byte, syntaxErr string) (any, error)) func(string) (any, error) {
	return func(s string) (any, error) {
		if err := g.room(fn, int64(len(s))); err != nil {
			return nil, err
		}
		js := []byte(s)
		if isYAML {
			var err error
			if js, err = yamlToJSON(js, g.remaining()); err != nil {
				ye := err.(*yamlError)
				if strings.HasPrefix(ye.msg, "duplicate key") || strings.Contains(ye.msg, "alias") || strings.Contains(ye.msg, "Max") {
					return nil, tooLargeOr(fn, ye)
				}
				return into(nil, fn+": "+ye.Error())
			}
		}
		v, err := into(js, "")
		if err != nil {
			return nil, err
		}
		m := measure.New(fn, g.remaining())
		shape, err := m.Measure(v)
		if err != nil {
			return nil, err
		}
		return v, g.take(fn, measure.AddSat(shape.Bytes, measure.MulSat(shape.Items, elementBytes)))
	}
}

// tooLargeOr is the error of a YAML problem in a function: ReasonTooLarge
// for a bound.
func tooLargeOr(fn string, ye *yamlError) error {
	if strings.Contains(ye.msg, "Max") || strings.Contains(ye.msg, "alias") {
		return tooLarge(fn, "%s", ye)
	}
	return funcError(fn, "%s", ye)
}

// jsonSyntax is a JSON error without the text it quotes.
func jsonSyntax(fn string, err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s: not valid JSON at byte %d", fn, se.Offset)
	}
	return fn + ": the JSON does not decode to the expected type"
}

// intoMap and intoArray are Helm's results: a syntax error goes in the
// result (a map's "Error" key, an array's only element).
func intoMap(fn string) func([]byte, string) (any, error) {
	return func(js []byte, syntaxErr string) (any, error) {
		m := map[string]any{}
		if js == nil {
			m["Error"] = syntaxErr
			return m, nil
		}
		if err := json.Unmarshal(js, &m); err != nil {
			m = map[string]any{"Error": jsonSyntax(fn, err)}
		}
		return m, nil
	}
}

func intoArray(fn string) func([]byte, string) (any, error) {
	return func(js []byte, syntaxErr string) (any, error) {
		if js == nil {
			return []any{syntaxErr}, nil
		}
		var a []any
		if err := json.Unmarshal(js, &a); err != nil {
			return []any{jsonSyntax(fn, err)}, nil
		}
		return a, nil
	}
}

func intoAny(js []byte, _ string) (any, error) {
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, funcError("mustFromJson", "%s", strings.TrimPrefix(jsonSyntax("mustFromJson", err), "mustFromJson: "))
	}
	return v, nil
}

// serializer wraps toYaml, toJson, toPrettyJson, toRawJson and their must
// forms: the value is measured (MaxValueDepth; bytes left) before it is
// serialized, and the result charged. Helm's toYaml and sprig's toJson
// write "" for a value they cannot serialize; a value too large or too
// deep is an error of the render.
func (g *guard) serializer(fn string, marshal func(any) (string, error)) func(any) (string, error) {
	return func(v any) (string, error) {
		m := measure.New(fn, g.remaining())
		if _, err := m.Measure(v); err != nil {
			return "", err
		}
		out, err := marshal(v)
		if err != nil {
			return "", funcError(fn, "the value cannot be serialized (a %T)", v)
		}
		return out, g.take(fn, int64(len(out)))
	}
}

// lenient turns a marshal error into "", as Helm's toYaml and sprig's toJson.
func lenient(marshal func(any) (string, error)) func(any) (string, error) {
	return func(v any) (string, error) {
		out, err := marshal(v)
		if err != nil {
			return "", nil
		}
		return out, nil
	}
}

func marshalYAML(v any) (string, error) {
	if out, ok := toYAMLFast(v); ok {
		return out, nil
	}
	data, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(data), "\n"), err
}

func marshalJSON(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}

func marshalPrettyJSON(v any) (string, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	return string(data), err
}

func marshalRawJSON(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
