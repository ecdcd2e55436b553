package outputs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// AnnotationID is the annotation a template sets on an object to give it
// the id expressions address it by.
const AnnotationID = "stencil.dev/id"

// CostLimit bounds one evaluation of one expression, in CEL's cost units:
// the API server's per-call limit for validation rules (about a tenth of
// a second).
const CostLimit = celconfig.PerCallLimit

// MaxExpressionLength bounds an expression's source, in bytes.
const MaxExpressionLength = 8 << 10

// MaxValueBytes bounds one output's value, as JSON: a parent's status is
// written whole, and one output copying a large member (a ConfigMap's
// data) must not make that write fail for every field.
const MaxValueBytes = 16 << 10

// The JSON Schema types an output may declare.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
)

// Output declares one status field computed from the members.
type Output struct {
	// Name is the status field's name.
	Name string
	// Type is its JSON Schema type (TypeString, TypeInteger, ...).
	Type string
	// Value is the CEL expression over parent and members.
	Value string
	// Path says where the output is declared, for errors, such as
	// "spec.outputs[0]"; its expression's errors name Path+".value".
	Path string
}

// Rule replaces kstatus's readiness for the members it selects.
type Rule struct {
	// Member selects members: an id, a Kind ("StatefulSet") or a
	// group/Kind ("apps/StatefulSet").
	Member string
	// ReadyWhen is a CEL expression over self (the member's live object)
	// and parent, of type bool.
	ReadyWhen string
	// Path says where the rule is declared, for errors.
	Path string
}

// Set is a compiled set of outputs and readiness rules.
type Set struct {
	outputs []compiledOutput
	rules   []compiledRule
}

type compiledOutput struct {
	Output
	prg cel.Program
}

type compiledRule struct {
	Rule
	prg cel.Program
}

// CompileError lists every declaration that does not compile.
type CompileError struct {
	// Problems are "path: message" lines, one per problem, in the order
	// of the declarations.
	Problems []string
}

func (e *CompileError) Error() string {
	return strings.Join(e.Problems, "; ")
}

// Environment is which CEL environment expressions compile in: New for
// expressions a user is writing now (lint, admission), Stored for
// expressions already accepted (the controller), as the API server
// compiles new and stored validation rules.
type Environment int

const (
	// New is the environment of expressions being written.
	New Environment = iota
	// Stored is the environment of expressions already accepted; it may
	// hold more than New during an upgrade.
	Stored
)

// envs builds the two environments once.
var envs = func() [2]*cel.Env {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("parent", cel.DynType),
			cel.Variable("members", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("self", cel.DynType),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("outputs: CEL environment: %v", err))
	}
	return [2]*cel.Env{set.NewExpressionsEnv(), set.StoredExpressionsEnv()}
}()

// Compile compiles outputs and rules in env. It returns a *CompileError
// naming every declaration that does not compile.
func Compile(env Environment, outs []Output, rules []Rule) (*Set, error) {
	e := envs[env]
	s := &Set{}
	var problems []string
	seen := map[string]bool{}
	for _, o := range outs {
		switch {
		case o.Name == "":
			problems = append(problems, o.Path+".name: required")
			continue
		case seen[o.Name]:
			problems = append(problems, fmt.Sprintf("%s.name: %q is declared twice", o.Path, o.Name))
			continue
		}
		seen[o.Name] = true
		want, ok := celTypes[o.Type]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s.type: %q is not one of string, integer, number, boolean, object, array", o.Path, o.Type))
			continue
		}
		prg, err := compile(e, o.Value, o.Path+".value", want)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		s.outputs = append(s.outputs, compiledOutput{o, prg})
	}
	for _, r := range rules {
		if r.Member == "" {
			problems = append(problems, r.Path+".member: required")
			continue
		}
		prg, err := compile(e, r.ReadyWhen, r.Path+".readyWhen", cel.BoolType)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		s.rules = append(s.rules, compiledRule{r, prg})
	}
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}
	return s, nil
}

// celTypes are the CEL types of the declarable JSON Schema types.
var celTypes = map[string]*cel.Type{
	TypeString:  cel.StringType,
	TypeInteger: cel.IntType,
	TypeNumber:  cel.DoubleType,
	TypeBoolean: cel.BoolType,
	TypeObject:  cel.MapType(cel.StringType, cel.DynType),
	TypeArray:   cel.ListType(cel.DynType),
}

// compile compiles one expression whose value must have type want (or
// dyn, checked when evaluated).
func compile(e *cel.Env, expr, path string, want *cel.Type) (cel.Program, error) {
	switch {
	case strings.TrimSpace(expr) == "":
		return nil, fmt.Errorf("%s: required", path)
	case len(expr) > MaxExpressionLength:
		return nil, fmt.Errorf("%s: longer than %d bytes", path, MaxExpressionLength)
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		var lines []string
		for _, ce := range iss.Errors() {
			lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", path, ce.Location.Line(), ce.Location.Column()+1, ce.Message))
		}
		return nil, errors.New(strings.Join(lines, "; "))
	}
	got := ast.OutputType()
	if !assignable(want, got) {
		return nil, fmt.Errorf("%s: the expression's type is %s, want %s", path, got, want)
	}
	prg, err := e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return prg, nil
}

// assignable reports whether a value of type got may be stored as want:
// dyn (known only when evaluated), the same type, or an integer for a
// number.
func assignable(want, got *cel.Type) bool {
	switch {
	case got.Kind() == types.DynKind || got.IsAssignableType(want) || want.IsAssignableType(got):
		return true
	case want == cel.DoubleType && got == cel.IntType:
		return true
	}
	return false
}

// Outputs lists the declared outputs, as compiled, sorted by name.
func (s *Set) Outputs() []Output {
	out := make([]Output, len(s.outputs))
	for i, o := range s.outputs {
		out[i] = o.Output
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Problem says why an output has no value, or why a readiness rule could
// not decide.
type Problem struct {
	// Path is where the output or rule is declared.
	Path string
	// Name is the output's name, or the member's id for a rule.
	Name string
	// Err is why.
	Err error
}

func (p Problem) Error() string { return fmt.Sprintf("%s (%s): %v", p.Path, p.Name, p.Err) }

// Evaluate computes every output from parent and members (by id). An
// output that fails is left out of values and named in problems.
func (s *Set) Evaluate(ctx context.Context, parent map[string]any, members map[string]map[string]any) (values map[string]any, problems []Problem) {
	values = map[string]any{}
	ms := make(map[string]any, len(members))
	for id, m := range members {
		ms[id] = m
	}
	vars := map[string]any{"parent": parent, "members": ms, "self": nil}
	for _, o := range s.outputs {
		v, err := eval(ctx, o.prg, vars)
		if err == nil {
			v, err = asType(v, o.Type)
		}
		if err == nil {
			err = sized(v)
		}
		if err != nil {
			problems = append(problems, Problem{Path: o.Path, Name: o.Name, Err: err})
			continue
		}
		values[o.Name] = v
	}
	return values, problems
}

// Ready applies the first rule that selects the member (by id, Kind or
// group/Kind) to its live object. matched is false when no rule selects
// it (kstatus decides); err says why a selecting rule could not decide
// (the member is then not ready).
func (s *Set) Ready(ctx context.Context, parent map[string]any, id string, gk schema.GroupKind, obj map[string]any) (ready, matched bool, err error) {
	for _, r := range s.rules {
		if !selects(r.Member, id, gk) {
			continue
		}
		v, err := eval(ctx, r.prg, map[string]any{"parent": parent, "members": map[string]any{}, "self": obj})
		if err != nil {
			return false, true, fmt.Errorf("%s.readyWhen: %w", r.Path, err)
		}
		b, ok := v.(bool)
		if !ok {
			return false, true, fmt.Errorf("%s.readyWhen: the value is %T, want a bool", r.Path, v)
		}
		return b, true, nil
	}
	return false, false, nil
}

// HasRules reports whether any readiness rule is declared.
func (s *Set) HasRules() bool { return s != nil && len(s.rules) > 0 }

// selects reports whether a rule's member selector names the member.
func selects(sel, id string, gk schema.GroupKind) bool {
	if sel == id {
		return true
	}
	group, kind, grouped := strings.Cut(sel, "/")
	if !grouped {
		return sel == gk.Kind
	}
	return group == gk.Group && kind == gk.Kind
}

// ID is the id expressions address a member by: its AnnotationID, else
// Kind/name.
func ID(obj *unstructured.Unstructured) string {
	if id := obj.GetAnnotations()[AnnotationID]; id != "" {
		return id
	}
	return obj.GetKind() + "/" + obj.GetName()
}

// eval evaluates prg and returns its value as JSON-like Go data.
func eval(ctx context.Context, prg cel.Program, vars map[string]any) (any, error) {
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return nil, err
	}
	return native(out)
}

// native turns a CEL value into JSON-like Go data: string, int64,
// float64, bool, nil, []any, map[string]any.
func native(v ref.Val) (any, error) {
	switch v := v.(type) {
	case types.String:
		return string(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("%d is too large an integer", uint64(v))
		}
		return int64(v), nil
	case types.Double:
		return float64(v), nil
	case types.Bool:
		return bool(v), nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		out := map[string]any{}
		it := v.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s, want a string", k.Type().TypeName())
			}
			e, err := native(v.Get(k))
			if err != nil {
				return nil, err
			}
			out[string(ks)] = e
		}
		return out, nil
	case traits.Lister:
		var out []any
		it := v.Iterator()
		for it.HasNext() == types.True {
			e, err := native(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
	// Other values (durations, timestamps, quantities...) as what they
	// convert to.
	n, err := v.ConvertToNative(reflect.TypeOf(""))
	if err != nil {
		return nil, fmt.Errorf("a value of type %s cannot be a status field", v.Type().TypeName())
	}
	return n, nil
}

// asType checks v against the declared JSON Schema type: an integer
// output takes a whole number, a number output any number.
func asType(v any, typ string) (any, error) {
	ok := false
	switch typ {
	case TypeString:
		_, ok = v.(string)
	case TypeInteger:
		switch n := v.(type) {
		case int64:
			ok = true
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return int64(n), nil
			}
		}
	case TypeNumber:
		switch n := v.(type) {
		case float64:
			ok = true
		case int64:
			return float64(n), nil
		}
	case TypeBoolean:
		_, ok = v.(bool)
	case TypeObject:
		_, ok = v.(map[string]any)
	case TypeArray:
		_, ok = v.([]any)
	}
	if !ok {
		return nil, fmt.Errorf("the value is %s, want %s", jsonType(v), typ)
	}
	return v, nil
}

// jsonType names v's JSON type.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// sized refuses a value larger than MaxValueBytes as JSON.
func sized(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(raw) > MaxValueBytes {
		return fmt.Errorf("the value is %d bytes as JSON, more than %d", len(raw), MaxValueBytes)
	}
	return nil
}
