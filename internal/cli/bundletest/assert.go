package bundletest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates/observed"
)

// testCase is a case, checked and compiled.
type testCase struct {
	suite   *suite
	name    string
	values  json.RawMessage
	parent  Parent
	fixture *session.Fixture
	checks  []check
	// fails is whether the case expects the render to fail.
	fails bool
}

// check is one compiled assertion.
type check struct {
	// label names it in failures: "assert[2] equal".
	label string
	run   func(ctx context.Context, r *result) []string
}

// result is what a case's render gave: its objects, or its error.
type result struct {
	objects []*unstructured.Unstructured
	err     error
	// update rewrites snapshots that differ (--update-snapshots), and
	// written collects the files it wrote.
	update  bool
	written []string
}

// failure is one assertion that did not hold.
type failure struct {
	// assertion names it ("assert[2] equal"); text says what failed.
	assertion, text string
}

func (f failure) String() string { return f.assertion + ": " + f.text }

// assertionKinds are the fields of an Assertion, in its order.
var assertionKinds = []string{"exists", "absent", "equal", "match", "cel", "snapshot", "fails"}

// compileAssertions checks and compiles a case's assert list at p.
func (s *suite) compileAssertions(c *Case, p *field.Path) ([]check, bool, field.ErrorList) {
	if len(c.Assert) == 0 {
		return nil, false, field.ErrorList{field.Required(p, "a case asserts something: exists, absent, equal, match, cel, snapshot or fails")}
	}
	var errs field.ErrorList
	var checks []check
	snapshots := map[string]bool{}
	fails := false
	for i, a := range c.Assert {
		ip := p.Index(i)
		kinds := setKinds(a)
		if len(kinds) == 0 {
			errs = append(errs, field.Required(ip, "one of "+strings.Join(assertionKinds, ", ")))
			continue
		}
		if len(kinds) != 1 {
			errs = append(errs, field.Invalid(ip, strings.Join(kinds, ", "), "want exactly one of "+strings.Join(assertionKinds, ", ")))
			continue
		}
		fails = fails || a.Fails != nil
		ch, err := s.compileAssertion(c, a, ip.Child(kinds[0]), snapshots)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ch.label = fmt.Sprintf("assert[%d] %s", i, kinds[0])
		checks = append(checks, ch)
	}
	if fails && len(c.Assert) > 1 {
		errs = append(errs, field.Invalid(p, omit, "fails holds alone: a render that fails has no objects to assert on"))
	}
	return checks, fails, errs
}

// setKinds names the fields of a that are set.
func setKinds(a Assertion) []string {
	v := reflect.ValueOf(a)
	var out []string
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			out = append(out, assertionKinds[i])
		}
	}
	return out
}

// compileAssertion compiles the one assertion a holds, at p.
func (s *suite) compileAssertion(c *Case, a Assertion, p *field.Path, snapshots map[string]bool) (check, *field.Error) {
	switch {
	case a.Exists != nil:
		if a.Exists.Count != nil && *a.Exists.Count < 0 {
			return check{}, field.Invalid(p.Child("count"), *a.Exists.Count, "must be 0 or more (absent says none)")
		}
		return check{run: existsCheck(*a.Exists)}, nil
	case a.Absent != nil:
		return check{run: absentCheck(*a.Absent)}, nil
	case a.Equal != nil:
		return compileEqual(*a.Equal, p)
	case a.Match != nil:
		return compileMatch(*a.Match, p)
	case a.CEL != nil:
		prg, err := compileCEL(a.CEL.Expression)
		if err != nil {
			return check{}, field.Invalid(p.Child("expression"), a.CEL.Expression, err.Error())
		}
		return check{run: celCheck(prg, *a.CEL)}, nil
	case a.Snapshot != nil:
		return s.compileSnapshot(c, *a.Snapshot, p, snapshots)
	default:
		re, err := compileRegex(a.Fails.Message)
		if err != nil {
			return check{}, field.Invalid(p.Child("message"), a.Fails.Message, err.Error())
		}
		return check{run: failsCheck(re)}, nil
	}
}

// compileRegex compiles a non-empty regular expression.
func compileRegex(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, fmt.Errorf("empty: a regular expression")
	}
	return regexp.Compile(s)
}

// selected returns the objects sel picks.
func (r *result) selected(sel Selector) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.objects {
		if (sel.APIVersion == "" || o.GetAPIVersion() == sel.APIVersion) && (sel.Kind == "" || o.GetKind() == sel.Kind) &&
			(sel.Name == "" || o.GetName() == sel.Name) && (sel.Namespace == "" || o.GetNamespace() == sel.Namespace) {
			out = append(out, o)
		}
	}
	return out
}

// describeSelector names what a selector picks: "kind=Deployment name=web".
func describeSelector(sel Selector) string {
	var parts []string
	for _, kv := range [][2]string{{"apiVersion", sel.APIVersion}, {"kind", sel.Kind}, {"name", sel.Name}, {"namespace", sel.Namespace}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(parts) == 0 {
		return "any object"
	}
	return strings.Join(parts, " ")
}

// describeObject names an object: "Deployment team-a/web", "ClusterRole reader".
func describeObject(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// noMatch is the failure of an assertion whose selector picks nothing.
func noMatch(sel Selector, r *result) []string {
	return []string{fmt.Sprintf("no object matches %s (the render has %d: %s)", describeSelector(sel), len(r.objects), listObjects(r.objects))}
}

// listObjects names up to 10 objects.
func listObjects(objs []*unstructured.Unstructured) string {
	var names []string
	for i, o := range objs {
		if i == 10 {
			names = append(names, fmt.Sprintf("and %d more", len(objs)-10))
			break
		}
		names = append(names, describeObject(o))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func existsCheck(a ExistsAssertion) func(context.Context, *result) []string {
	return func(_ context.Context, r *result) []string {
		got := r.selected(a.Selector)
		switch {
		case a.Count == nil && len(got) == 0:
			return noMatch(a.Selector, r)
		case a.Count != nil && len(got) != *a.Count:
			return []string{fmt.Sprintf("%s: expected %d objects, got %d (%s)", describeSelector(a.Selector), *a.Count, len(got), listObjects(got))}
		}
		return nil
	}
}

func absentCheck(sel Selector) func(context.Context, *result) []string {
	return func(_ context.Context, r *result) []string {
		if got := r.selected(sel); len(got) > 0 {
			return []string{fmt.Sprintf("%s: expected no object, got %s", describeSelector(sel), listObjects(got))}
		}
		return nil
	}
}

func compileEqual(a EqualAssertion, p *field.Path) (check, *field.Error) {
	path, err := parsePath(a.Path)
	if err != nil {
		return check{}, field.Invalid(p.Child("path"), a.Path, err.Error())
	}
	if len(a.Value) == 0 {
		return check{}, field.Required(p.Child("value"), "what the field must equal (null: absent)")
	}
	var want any
	if err := json.Unmarshal(a.Value, &want); err != nil {
		return check{}, field.Invalid(p.Child("value"), omit, err.Error())
	}
	return check{run: func(_ context.Context, r *result) []string {
		objs := r.selected(a.Selector)
		if len(objs) == 0 {
			return noMatch(a.Selector, r)
		}
		var out []string
		for _, o := range objs {
			got, found, why := path.get(o.Object)
			switch {
			case want == nil && (!found || got == nil):
			case !found:
				out = append(out, fmt.Sprintf("%s: %s: expected %s, got (absent)%s", describeObject(o), path, show(want), because(why)))
			case !reflect.DeepEqual(normalize(got), want):
				out = append(out, fmt.Sprintf("%s: %s: expected %s, got %s", describeObject(o), path, show(want), show(got)))
			}
		}
		return out
	}}, nil
}

func compileMatch(a MatchAssertion, p *field.Path) (check, *field.Error) {
	path, err := parsePath(a.Path)
	if err != nil {
		return check{}, field.Invalid(p.Child("path"), a.Path, err.Error())
	}
	re, err := compileRegex(a.Regex)
	if err != nil {
		return check{}, field.Invalid(p.Child("regex"), a.Regex, err.Error())
	}
	return check{run: func(_ context.Context, r *result) []string {
		objs := r.selected(a.Selector)
		if len(objs) == 0 {
			return noMatch(a.Selector, r)
		}
		var out []string
		for _, o := range objs {
			got, found, why := path.get(o.Object)
			text := scalarText(got)
			switch {
			case !found:
				out = append(out, fmt.Sprintf("%s: %s: expected a match of %s, got (absent)%s", describeObject(o), path, a.Regex, because(why)))
			case text == "" && got != "":
				out = append(out, fmt.Sprintf("%s: %s: expected a match of %s, got %s, %s", describeObject(o), path, a.Regex, typeName(got), show(got)))
			case !re.MatchString(text):
				out = append(out, fmt.Sprintf("%s: %s: expected a match of %s, got %s", describeObject(o), path, a.Regex, show(got)))
			}
		}
		return out
	}}, nil
}

func celCheck(prg cel.Program, a CELAssertion) func(context.Context, *result) []string {
	return func(ctx context.Context, r *result) []string {
		objects := make([]any, len(r.objects))
		members := make(map[string]any, len(r.objects))
		for i, o := range r.objects {
			objects[i] = o.Object
			members[observed.MemberID(o)] = o.Object
		}
		what := a.Message
		if what == "" {
			what = a.Expression
		}
		ok, err := evalCEL(ctx, prg, objects, members)
		switch {
		case err != nil:
			return []string{fmt.Sprintf("%s: %v", what, err)}
		case !ok:
			return []string{fmt.Sprintf("%s: expected true, got false", what)}
		}
		return nil
	}
}

func failsCheck(re *regexp.Regexp) func(context.Context, *result) []string {
	return func(_ context.Context, r *result) []string {
		switch {
		case r.err == nil:
			return []string{fmt.Sprintf("expected the render to fail with %s, got %d objects", re, len(r.objects))}
		case !re.MatchString(r.err.Error()):
			return []string{fmt.Sprintf("expected an error matching %s, got: %v", re, r.err)}
		}
		return nil
	}
}

// because prints why a path stops, when there is a reason.
func because(why string) string {
	if why == "" {
		return ""
	}
	return ": " + why
}

// normalize makes a rendered value comparable with a decoded JSON one
// (int64 and float64 alike).
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}

// maxShown bounds a value printed in a failure, in bytes.
const maxShown = 200

// show prints a value as JSON, cut at maxShown.
func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(data) > maxShown {
		return string(data[:maxShown]) + "…"
	}
	return string(data)
}
