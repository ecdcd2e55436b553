package funcs

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"
	yamlv3 "go.yaml.in/yaml/v3"
)

// This file binds the functions that parse and write YAML and JSON
// (fromYaml, toYaml, fromJson, toJson, ...) to the render's guard; the
// reading and writing is package strictyaml's.

// parse wraps fromYaml, fromYamlArray, fromJson, fromJsonArray and
// mustFromJson: the text must fit the budget; what it parses to is
// measured (MaxValueDepth) and charged. As in Helm, fromYaml and fromJson
// put a syntax error in the result (its "Error" key; the message without
// what it quoted); a duplicate key, too many aliases and a value too deep
// or too large are errors of the render.
func (g *Guard) parse(fn string, isYAML bool, into func(js []byte, syntaxErr string) (any, error)) func(string) (any, error) {
	return func(s string) (any, error) {
		if err := g.room(fn, int64(len(s))); err != nil {
			return nil, err
		}
		js := []byte(s)
		if isYAML {
			var err error
			if js, err = strictyaml.ToJSON(js, g.remaining()); err != nil {
				ye := strictyaml.AsError(err)
				if strings.HasPrefix(ye.Msg, "duplicate key") || strings.Contains(ye.Msg, "alias") || strings.Contains(ye.Msg, "Max") {
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
func tooLargeOr(fn string, ye *strictyaml.Error) error {
	if strings.Contains(ye.Msg, "Max") || strings.Contains(ye.Msg, "alias") {
		return tooLarge(fn, "%s", ye)
	}
	return funcError(fn, "%s", ye)
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
			m = map[string]any{"Error": strictyaml.JSONSyntax(fn, err)}
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
			return []any{strictyaml.JSONSyntax(fn, err)}, nil
		}
		return a, nil
	}
}

func intoAny(js []byte, _ string) (any, error) {
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil, funcError("mustFromJson", "%s", strings.TrimPrefix(strictyaml.JSONSyntax("mustFromJson", err), "mustFromJson: "))
	}
	return v, nil
}

// serializer wraps toYaml, toJson, toPrettyJson, toRawJson and their must
// forms: the value is measured (MaxValueDepth; bytes left) before it is
// serialized, and the result charged. Helm's toYaml and sprig's toJson
// write "" for a value they cannot serialize; a value too large or too
// deep is an error of the render.
func (g *Guard) serializer(fn string, marshal func(any) (string, error)) func(any) (string, error) {
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

// lenient turns a marshal error into "", as Helm's toYaml and sprig's toJson
// and toPrettyJson.
func lenient(marshal func(any) (string, error)) func(any) (string, error) {
	return func(v any) (string, error) {
		out, err := marshal(v)
		if err != nil {
			return "", nil //nolint:nilerr // Helm's toYaml and sprig's toJson render a value they cannot serialize as "", not as an error
		}
		return out, nil
	}
}

// encodePrettyYAML writes v as Helm's toYamlPretty does, with the final
// line break (trimNewline), and without closing the stream, as Helm.
func encodePrettyYAML(w io.Writer, v any) error {
	enc := yamlv3.NewEncoder(w)
	enc.SetIndent(2)
	return enc.Encode(v)
}

func trimNewline(s string) string { return strings.TrimSuffix(s, "\n") }

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
