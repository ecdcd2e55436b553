package bundletest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates"
)

// TestsFolder is the folder of a bundle that holds its case files.
const TestsFolder = "tests"

// SnapshotFolder is the folder, beside a case file, of its snapshots.
const SnapshotFolder = "__snapshot__"

// FileError is a case file that cannot be run: every problem in it,
// each named by its field (cases[0].assert[1].equal.path).
type FileError struct {
	// File is the case file, as the command names it.
	File string
	// Problems are its problems, in the order of its fields.
	Problems field.ErrorList
}

func (e *FileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.File + ": " + p.Error()
	}
	return strings.Join(lines, "\n")
}

// suite is one case file, loaded and checked.
type suite struct {
	// path names the file as the command was given its folder.
	path string
	// dir is the file's folder; stem its name without the extension.
	dir, stem string
	cases     []*testCase
	// snapshots are the snapshot files its cases compare with.
	snapshots map[string]bool
}

// caseFiles lists the case files of the bundle folder dir: the YAML
// files right in its tests/ folder, sorted.
func caseFiles(dir string) ([]string, error) {
	tests := filepath.Join(dir, TestsFolder)
	entries, err := os.ReadDir(tests)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no %s/ folder: a bundle's cases are YAML files in it (stencil bundle init makes one)", dir, TestsFolder)
	} else if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); e.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, filepath.Join(tests, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no case files (*.yaml)", tests)
	}
	slices.Sort(out)
	return out, nil
}

// loadSuite reads and checks the case file path of bundle b.
func loadSuite(path string, b *templates.Bundle) (*suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &suite{path: path, dir: filepath.Dir(path), stem: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), snapshots: map[string]bool{}}
	f, decoded, errs := decodeFile(data)
	if errs = append(errs, s.compile(f, decoded, b)...); len(errs) > 0 {
		// In the order of the cases, each case's decoding first.
		slices.SortStableFunc(errs, func(a, b *field.Error) int { return cmp.Compare(caseIndex(a.Field), caseIndex(b.Field)) })
		return nil, &FileError{File: path, Problems: errs}
	}
	return s, nil
}

// caseIndex is the index of the case a problem's field is in, -1 for
// the file.
func caseIndex(f string) int {
	rest, ok := strings.CutPrefix(f, "cases[")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, ']'), 0)])
	if err != nil {
		return -1
	}
	return n
}

// omit leaves a problem's value out of its message: a case file's values
// may be long, or secret.
var omit = field.OmitValueType{}

// decodeFile decodes a case file strictly: a duplicate key, an unknown
// field or a value of the wrong type is a problem named by its field,
// every case and assertion decoded apart so that each problem is named.
func decodeFile(data []byte) (File, []bool, field.ErrorList) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return File{}, nil, field.ErrorList{field.Invalid(field.NewPath("(file)"), omit, err.Error())}
	}
	var top struct {
		Cases []json.RawMessage `json:"cases"`
	}
	topErrs, ok := decodeJSON(js, &top, "")
	if !ok {
		return File{}, nil, topErrs
	}
	if len(top.Cases) == 0 {
		return File{}, nil, field.ErrorList{field.Required(field.NewPath("cases"), "a case file holds cases: a list of at least one case")}
	}
	f := File{Cases: make([]Case, len(top.Cases))}
	decoded := make([]bool, len(top.Cases))
	errs := topErrs
	for i, raw := range top.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		// assert is decoded item by item, below.
		var cf struct {
			Case
			Assert []json.RawMessage `json:"assert"`
		}
		e, ok := decodeJSON(raw, &cf, at)
		errs = append(errs, e...)
		if !ok {
			continue
		}
		c := cf.Case
		c.Assert = make([]Assertion, len(cf.Assert))
		decoded[i] = true
		for j, a := range cf.Assert {
			e, ok := decodeJSON(a, &c.Assert[j], fmt.Sprintf("%s.assert[%d]", at, j))
			errs = append(errs, e...)
			decoded[i] = decoded[i] && ok
		}
		f.Cases[i] = c
	}
	return f, decoded, errs
}

// decodeJSON decodes js strictly into v; problems are named by their
// field below at. ok is false when v could not be decoded whole (a value
// of the wrong type); an unknown or duplicate field is a problem, and the
// rest decoded.
func decodeJSON(js []byte, v any, at string) (errs field.ErrorList, ok bool) {
	named := func(name string) *field.Path {
		switch {
		case at == "":
			return field.NewPath(name)
		case name == "":
			return field.NewPath(at)
		}
		return field.NewPath(at + "." + name)
	}
	strict, err := kjson.UnmarshalStrict(js, v)
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		errs = append(errs, field.Invalid(named(strings.TrimPrefix(te.Field, "Case.")), omit, fmt.Sprintf("want %s, not %s", jsonTypeName(te.Type), articled(te.Value))))
	case err != nil:
		errs = append(errs, field.Invalid(named(""), omit, err.Error()))
	}
	for _, e := range strict {
		msg := e.Error()
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			errs = append(errs, field.Forbidden(named(strings.Trim(name, `"`)), "unknown field"))
			continue
		}
		errs = append(errs, field.Invalid(named(""), omit, msg))
	}
	return errs, err == nil
}

// jsonTypeName names the JSON a Go type decodes from.
func jsonTypeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return "any value"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer"
	case t.Kind() == reflect.Slice:
		return "a list"
	}
	return "an object"
}

// articled names a JSON value's type as decoding names it ("bool",
// "array", "object"), with its article.
func articled(name string) string {
	switch name {
	case "bool":
		return "a boolean (a bare y, n, yes, no, on or off is one: quote it)"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	return "a " + name
}

// compile checks every case of f that decoded and compiles it; it
// returns every problem, named by its field.
func (s *suite) compile(f File, decoded []bool, b *templates.Bundle) field.ErrorList {
	root := field.NewPath("cases")
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range f.Cases {
		p := root.Index(i)
		c := &f.Cases[i]
		if !decoded[i] {
			continue
		}
		switch {
		case strings.TrimSpace(c.Name) == "":
			errs = append(errs, field.Required(p.Child("name"), "say what the case checks"))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
		tc, caseErrs := s.compileCase(c, p, b)
		errs = append(errs, caseErrs...)
		s.cases = append(s.cases, tc)
	}
	return errs
}

// compileCase checks one case at p.
func (s *suite) compileCase(c *Case, p *field.Path, b *templates.Bundle) (*testCase, field.ErrorList) {
	tc := &testCase{suite: s, name: c.Name, parent: c.Parent, fixture: &session.Fixture{Upgrade: c.Parent.Upgrade}}
	var errs field.ErrorList
	tc.values, errs = s.mergeValues(c, p)
	errs = append(errs, checkParent(&tc.parent, p.Child("parent"), b)...)
	caps, capErrs := capabilities(c.Capabilities, p.Child("capabilities"))
	tc.fixture.Capabilities = caps
	errs = append(errs, capErrs...)
	var fixErrs field.ErrorList
	tc.fixture.Objects, fixErrs = lookupObjects(c.Lookups, p.Child("lookups"))
	errs = append(errs, fixErrs...)
	tc.fixture.Observed, fixErrs = observedMembers(c.Observed, p.Child("observed"))
	errs = append(errs, fixErrs...)
	checks, fails, checkErrs := s.compileAssertions(c, p.Child("assert"))
	tc.checks, tc.fails = checks, fails
	return tc, append(errs, checkErrs...)
}

// mergeValues merges the case's values files, then its values, in
// order; nil when there are none.
func (s *suite) mergeValues(c *Case, p *field.Path) (json.RawMessage, field.ErrorList) {
	var merged map[string]any
	var errs field.ErrorList
	for i, name := range c.ValuesFiles {
		fp := p.Child("valuesFiles").Index(i)
		if filepath.IsAbs(name) {
			errs = append(errs, field.Invalid(fp, name, "a path relative to the case file's folder"))
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			errs = append(errs, field.Invalid(fp, name, err.Error()))
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			errs = append(errs, field.Invalid(fp, name, err.Error()))
			continue
		}
		merged = mergeMaps(merged, m)
	}
	if len(c.Values) > 0 && string(c.Values) != "null" {
		var m map[string]any
		if err := json.Unmarshal(c.Values, &m); err != nil {
			return nil, append(errs, field.Invalid(p.Child("values"), omit, "want an object of values"))
		}
		merged = mergeMaps(merged, m)
	}
	if merged == nil || len(errs) > 0 {
		return nil, errs
	}
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(p.Child("values"), err)}
	}
	return raw, nil
}

// mergeMaps merges src over dst (maps merge key by key, any other value
// replaces) and returns dst.
func mergeMaps(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		sm, ok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if ok && dok {
			dst[k] = mergeMaps(dm, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}
