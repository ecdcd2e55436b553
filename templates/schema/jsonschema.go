package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/stencil-dev/stencil/templates/fault"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates values with a bundle's values.schema.json: a JSON
// Schema, as Helm 4 validates a chart's (helm.sh/helm/v4@v4.3.1
// pkg/chart/common/util/jsonschema.go, ValidateAgainstSingleSchema), with
// the same library (github.com/santhosh-tekuri/jsonschema/v6), the same
// resource URL, draft and options: drafts 4, 6, 7, 2019-09 and 2020-12 by
// their $schema, 2020-12 without one; format asserted by draft-07 and
// older only; content keywords not asserted; no defaults applied (JSON
// Schema's default is an annotation). Unlike Helm it loads nothing: a
// $ref to another file or a URL is an error when the bundle loads, never
// fetched (Helm reads file: and http(s): references), so a render reads
// neither the disk nor the network. A urn: reference Helm cannot resolve
// is a schema that allows everything, as in Helm.

// jsonSchemaURL is the URL the schema is compiled under, Helm's.
// JSONFile is a chart's JSON Schema of its values, as Helm's: values are
// validated with it, never defaulted.
const JSONFile = "values.schema.json"

// valuesRoot is the root of every values field path in errors.
var valuesRoot = field.NewPath("values")

const jsonSchemaURL = "file:///values.schema.json"

// jsonSchemaPrinter writes the library's messages.
var jsonSchemaPrinter = message.NewPrinter(language.English)

// NewJSON compiles a values.schema.json. Every error is a
// RenderError naming the file (and the line of a JSON syntax error).
func NewJSON(text string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		re := &fault.RenderError{File: JSONFile, Msg: "not valid JSON: " + err.Error(), Err: err}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			re.Line = 1 + strings.Count(text[:min(int(se.Offset), len(text))], "\n")
		}
		return nil, re
	}
	c := jsonschema.NewCompiler()
	// Helm leaves the library's default, 2020-12 in the version Helm
	// 4.3.1 uses: said here, so an upgrade of the library cannot change it.
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(offlineLoader{})
	dialect := ""
	if m, ok := doc.(map[string]any); ok {
		dialect, _ = m["$schema"].(string)
	}
	if err := c.AddResource(jsonSchemaURL, doc); err != nil {
		return nil, jsonSchemaError(err, dialect)
	}
	s, err := c.Compile(jsonSchemaURL)
	if err != nil {
		return nil, jsonSchemaError(err, dialect)
	}
	return s, nil
}

// errNoLoad is the error of a reference to another document.
var errNoLoad = errors.New("stencil loads no schema from a file or the network: put what it defines under $defs (definitions before draft 2019-09) of values.schema.json and refer to it as #/$defs/NAME")

// offlineLoader is the compiler's loader for every document but
// values.schema.json and the drafts' metaschemas (built into the
// library): a urn: is the schema true, as Helm's urnLoader does for a
// URN no resolver knows; anything else is errNoLoad.
type offlineLoader struct{}

func (offlineLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return true, nil
	}
	return nil, errNoLoad
}

// jsonSchemaError is a compile error as a RenderError naming the file:
// a reference it would load, an unknown $schema, or the places where the
// schema breaks its draft's metaschema, each at its JSON pointer.
func jsonSchemaError(err error, dialect string) *fault.RenderError {
	msg := err.Error()
	var load *jsonschema.LoadURLError
	var invalid *jsonschema.SchemaValidationError
	switch {
	case errors.As(err, &load) && dialect != "" && strings.TrimSuffix(dialect, "#") == strings.TrimSuffix(load.URL, "#"):
		msg = fmt.Sprintf("$schema %s: not a draft stencil knows (draft-04, draft-06, draft-07, 2019-09, 2020-12)", dialect)
	case errors.As(err, &load):
		msg = fmt.Sprintf("$ref %s: %v", load.URL, load.Err)
	case errors.As(err, &invalid):
		var ve *jsonschema.ValidationError
		if errors.As(invalid.Err, &ve) {
			var problems []string
			w := &violationWriter{path: func(loc []string) string { return "at " + jsonPointer(loc) }}
			w.walk(ve, &problems)
			slices.Sort(problems)
			msg = "not a valid JSON Schema: " + strings.Join(slices.Compact(problems), "; ")
		}
	}
	msg = strings.ReplaceAll(msg, jsonSchemaURL, "")
	return &fault.RenderError{File: JSONFile, Msg: msg, Err: err}
}

// jsonPointer writes a location in the schema document.
func jsonPointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// ValidateJSON validates the values (merged and defaulted, as the
// templates see them) and returns every violation, each as "path:
// message", sorted, with the path of the first.
func ValidateJSON(s *jsonschema.Schema, values map[string]any) (violations []string, first string, err error) {
	defer func() {
		// As Helm, which recovers too; what the panic says may quote a
		// value, so it is not repeated.
		if r := recover(); r != nil {
			err = &fault.RenderError{File: JSONFile, Msg: "unable to validate the values (the validator failed)"}
		}
	}()
	verr := s.Validate(any(values))
	if verr == nil {
		return nil, "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return nil, "", &fault.RenderError{File: JSONFile, Msg: verr.Error(), Err: verr}
	}
	w := &violationWriter{path: func(loc []string) string { return valuesPath(values, loc) }}
	w.walk(ve, &violations)
	slices.Sort(violations)
	violations = slices.Compact(violations)
	if len(violations) > 0 {
		first, _, _ = strings.Cut(violations[0], ": ")
	}
	return violations, first, nil
}

// violationWriter writes the leaves of a validation error tree, each
// with its field path, never quoting a value (values hold secrets): the
// library's messages for pattern, format, bounds and lengths quote or
// show the value, so those are written here.
type violationWriter struct {
	path func(loc []string) string
}

func (w *violationWriter) walk(e *jsonschema.ValidationError, out *[]string) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Reference, *kind.Group, *kind.AllOf:
		for _, c := range e.Causes {
			w.walk(c, out)
		}
		return
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			var branches []string
			for _, c := range e.Causes {
				w.walk(c, &branches)
			}
			slices.Sort(branches)
			branches = slices.Compact(branches)
			at := w.path(e.InstanceLocation)
			for i, br := range branches {
				branches[i] = strings.TrimPrefix(br, at+": ")
			}
			*out = append(*out, fmt.Sprintf("%s: %s (%s)", at, k.LocalizedString(jsonSchemaPrinter), strings.Join(branches, " | ")))
			return
		}
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, w.path(append(slices.Clip(e.InstanceLocation), m))+": Required value")
		}
		return
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			*out = append(*out, w.path(append(slices.Clip(e.InstanceLocation), p))+": not allowed (additionalProperties)")
		}
		return
	case *kind.PropertyNames:
		*out = append(*out, w.path(append(slices.Clip(e.InstanceLocation), k.Property))+": not a valid property name (propertyNames)")
		return
	}
	*out = append(*out, w.path(e.InstanceLocation)+": "+violationMessage(e.ErrorKind))
}

// violationMessage says what rule a value breaks, without the value.
func violationMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return fmt.Sprintf("does not match pattern %s", strconv.Quote(k.Want))
	case *kind.Format:
		return fmt.Sprintf("is not a valid %s", k.Want)
	case *kind.Minimum:
		return "must be >= " + ratString(k.Want)
	case *kind.Maximum:
		return "must be <= " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be > " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be < " + ratString(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + ratString(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.FalseSchema:
		return "not allowed (the schema is false)"
	case *kind.Not:
		return "must not be valid against the schema of not"
	case *kind.InvalidJsonValue:
		return "not a JSON value"
	}
	return k.LocalizedString(jsonSchemaPrinter)
}

func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// valuesPath writes an instance location as a field path from "values":
// a token is a list index where the values hold a list, a key elsewhere.
func valuesPath(values map[string]any, loc []string) string {
	p := valuesRoot
	var cur any = values
	for _, tok := range loc {
		if list, ok := cur.([]any); ok {
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(list) {
				p, cur = p.Index(i), list[i]
				continue
			}
		}
		p = p.Child(tok)
		if m, ok := cur.(map[string]any); ok {
			cur = m[tok]
		} else {
			cur = nil
		}
	}
	return p.String()
}
