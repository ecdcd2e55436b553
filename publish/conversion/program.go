package conversion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Cost bounds, in CEL's cost units, as the API server bounds a CRD's
// validation rules.
const (
	// CostLimit bounds one evaluation of one expression: the API
	// server's per-call limit (about a tenth of a second).
	CostLimit = celconfig.PerCallLimit
	// TotalCostLimit bounds every expression of one Apply together, and
	// of one Convert (two Applies and the round trip that finds what the
	// target cannot hold): the API server's budget of one object's
	// validation rules.
	TotalCostLimit = celconfig.RuntimeCELCostBudget
	// EstimatedCostLimit bounds an expression's worst case, estimated
	// when it compiles with every list, map and string of self 32,768
	// elements long: the API server's limit of a validation rule's
	// estimated cost.
	EstimatedCostLimit = 10_000_000
	// MaxExpressionLength bounds an expression's source, in bytes, as
	// the API's field does.
	MaxExpressionLength = 4096
)

// The operations of a rule, as errors name them.
const (
	OpMove    = "move"
	OpDefault = "default"
	OpSet     = "set"
	OpDelete  = "delete"
)

// Program is a compiled list of rules. It is safe for concurrent use.
type Program struct {
	steps []step
}

// step is one compiled rule.
type step struct {
	index int
	op    string
	path  *field.Path // the rule's own field path, for errors
	at    []string    // the field the rule writes (move: to)
	from  []string    // move: the field moved
	value any         // default: the value
	expr  string      // set: the expression
	prg   cel.Program // set: the compiled expression
}

// env is the CEL environment expressions compile in: Kubernetes' CEL
// (the libraries of a CRD's validation rules) with one variable, self,
// the document as a map.
var env = func() *cel.Env {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("self", cel.MapType(cel.StringType, cel.DynType)),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("conversion: CEL environment: %v", err))
	}
	e, err := set.NewExpressionsEnv().Extend()
	if err == nil {
		e, err = e.Extend(cel.CustomTypeAdapter(orderedAdapter{base: e.CELTypeAdapter()}))
	}
	if err != nil {
		panic(fmt.Sprintf("conversion: CEL environment: %v", err))
	}
	return e
}()

// Compile checks and compiles rules, the list at path (such as
// spec.api.versions[1].conversion.toStorage). Every problem is in the
// list, named by the rule's field: path[i].move.from,
// path[i].set.expression, ...; the program is nil when there is one.
func Compile(rules []v1alpha1.ConversionRule, path *field.Path) (*Program, field.ErrorList) {
	p := &Program{}
	var errs field.ErrorList
	for i, r := range rules {
		s, ruleErrs := compileRule(r, path.Index(i))
		s.index = i
		errs = append(errs, ruleErrs...)
		p.steps = append(p.steps, s)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// compileRule compiles one rule.
func compileRule(r v1alpha1.ConversionRule, p *field.Path) (step, field.ErrorList) {
	s := step{path: p}
	var errs field.ErrorList
	ops := 0
	if r.Move != nil {
		ops++
		s.op = OpMove
		var e1, e2 field.ErrorList
		s.from, e1 = parsePath(r.Move.From, p.Child("move", "from"))
		s.at, e2 = parsePath(r.Move.To, p.Child("move", "to"))
		errs = append(append(errs, e1...), e2...)
	}
	if r.Default != nil {
		ops++
		s.op = OpDefault
		var e field.ErrorList
		s.at, e = parsePath(r.Default.Path, p.Child("default", "path"))
		errs = append(errs, e...)
		if err := decodeJSON(r.Default.Value.Raw, &s.value); err != nil || len(r.Default.Value.Raw) == 0 {
			errs = append(errs, field.Invalid(p.Child("default", "value"), nil, "not a JSON value"))
		}
		s.value = normalize(s.value)
	}
	if r.Set != nil {
		ops++
		s.op = OpSet
		var e field.ErrorList
		s.at, e = parsePath(r.Set.Path, p.Child("set", "path"))
		errs = append(errs, e...)
		s.expr = r.Set.Expression
		var err *field.Error
		s.prg, err = compileExpression(r.Set.Expression, p.Child("set", "expression"))
		if err != nil {
			errs = append(errs, err)
		}
	}
	if r.Delete != nil {
		ops++
		s.op = OpDelete
		var e field.ErrorList
		s.at, e = parsePath(r.Delete.Path, p.Child("delete", "path"))
		errs = append(errs, e...)
	}
	if ops != 1 {
		errs = append(errs, field.Invalid(p, nil, fmt.Sprintf("exactly one of move, default, set and delete, not %d", ops)))
	}
	return s, errs
}

// parsePath splits a dot-separated path of field names.
func parsePath(s string, p *field.Path) ([]string, field.ErrorList) {
	if s == "" {
		return nil, field.ErrorList{field.Required(p, "a dot-separated path of field names, such as service.port")}
	}
	if len(s) > 512 {
		return nil, field.ErrorList{field.TooLong(p, nil, 512)}
	}
	parts := strings.Split(s, ".")
	for _, part := range parts {
		if part == "" {
			return nil, field.ErrorList{field.Invalid(p, s, "a dot-separated path of field names: no name may be empty")}
		}
	}
	return parts, nil
}

// compileExpression compiles a set rule's expression and bounds its
// estimated cost.
func compileExpression(expr string, p *field.Path) (cel.Program, *field.Error) {
	switch {
	case strings.TrimSpace(expr) == "":
		return nil, field.Required(p, "a CEL expression over self")
	case len(expr) > MaxExpressionLength:
		return nil, field.TooLong(p, nil, MaxExpressionLength)
	}
	ast, iss := env.Parse(expr)
	if iss.Err() == nil {
		nullableBranches(ast.NativeRep())
		ast, iss = env.Check(ast)
	}
	if iss.Err() != nil {
		var lines []string
		for _, ce := range iss.Errors() {
			lines = append(lines, fmt.Sprintf("%d:%d: %s", ce.Location.Line(), ce.Location.Column()+1, ce.Message))
		}
		return nil, field.Invalid(p, expr, "does not compile: "+strings.Join(lines, "; "))
	}
	est, err := env.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator{}})
	if err != nil {
		return nil, field.Invalid(p, expr, "its cost cannot be estimated: "+err.Error())
	}
	if est.Max > EstimatedCostLimit {
		return nil, field.Forbidden(p, fmt.Sprintf("the expression's estimated cost, %s, exceeds the limit of %d for lists of self %d items long: "+
			"avoid iterating a list inside another's iteration", costString(est.Max), EstimatedCostLimit, maxElements))
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		return nil, field.Invalid(p, expr, err.Error())
	}
	return prg, nil
}

// costString prints an estimated cost; the unbounded one in words.
func costString(c uint64) string {
	if c == math.MaxUint64 {
		return "unbounded"
	}
	return fmt.Sprint(c)
}

// sizeEstimator bounds every list, map and string reached from self by
// maxElements. self is a map of any values, so unlike a CRD's rule the
// estimate knows no maxItems: the bound is chosen so that one iteration
// of any list passes while an iteration nested in another's (whose cost
// grows with the square of the list) does not; what the estimate cannot
// see, CostLimit stops when the expression runs.
type sizeEstimator struct{}

// maxElements is how many elements (characters of a string) a collection
// of self is assumed to hold at most.
const maxElements = uint64(1 << 15)

// EstimateSize implements checker.CostEstimator.
func (sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if len(n.Path()) > 0 && n.Path()[0] == "self" {
		return &checker.SizeEstimate{Min: 0, Max: maxElements}
	}
	return nil
}

// EstimateCallCost implements checker.CostEstimator.
func (sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Error is a rule that failed to apply. Its message names the rule (its
// field path and index), the operation, the field and the expression,
// never a value of the document.
type Error struct {
	// Rule is the rule's field path, such as
	// spec.api.versions[1].conversion.toStorage[2].
	Rule string
	// Index is the rule's index in its list.
	Index int
	// Op is OpMove, OpDefault, OpSet or OpDelete.
	Op string
	// Field is the dot-separated path the rule writes.
	Field string
	// Expression is a set rule's expression.
	Expression string
	// Err is why.
	Err error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s (%s %s)", e.Rule, e.Op, e.Field)
	if e.Expression != "" {
		expr := e.Expression
		if len(expr) > 200 {
			expr = expr[:200] + "..."
		}
		s += fmt.Sprintf(": expression %q", expr)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// ErrCostExceeded is why the expressions of one Apply or Convert stopped
// together: they cost more than TotalCostLimit.
var ErrCostExceeded = errors.New("the conversion's expressions exceed their total cost limit")

// Apply applies the rules in order to a copy of doc and returns the
// copy; doc is never changed. A set rule's expression sees self, doc as
// it is (before the first rule). An error is an *Error.
func (p *Program) Apply(doc map[string]any) (map[string]any, error) {
	budget := uint64(TotalCostLimit)
	return p.apply(context.Background(), doc, &budget)
}

// ApplyContext is Apply, stopping when ctx ends.
func (p *Program) ApplyContext(ctx context.Context, doc map[string]any) (map[string]any, error) {
	budget := uint64(TotalCostLimit)
	return p.apply(ctx, doc, &budget)
}

// apply applies the rules, charging the expressions' cost to budget.
func (p *Program) apply(ctx context.Context, doc map[string]any, budget *uint64) (map[string]any, error) {
	out, _ := deepCopy(doc).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	if p == nil {
		return out, nil
	}
	self := doc
	if self == nil {
		self = map[string]any{}
	}
	for _, s := range p.steps {
		if err := s.apply(ctx, out, self, budget); err != nil {
			return nil, &Error{Rule: s.path.String(), Index: s.index, Op: s.op, Field: strings.Join(s.at, "."), Expression: s.expr, Err: err}
		}
	}
	return out, nil
}

// apply applies one rule to out.
func (s step) apply(ctx context.Context, out, self map[string]any, budget *uint64) error {
	switch s.op {
	case OpMove:
		v, ok := get(out, s.from)
		if !ok {
			return nil
		}
		remove(out, s.from)
		return set(out, s.at, v)
	case OpDefault:
		if _, ok := get(out, s.at); ok {
			return nil
		}
		return set(out, s.at, deepCopy(s.value))
	case OpSet:
		v, err := s.eval(ctx, self, budget)
		if err != nil {
			return err
		}
		if v == nil {
			remove(out, s.at)
			return nil
		}
		return set(out, s.at, v)
	case OpDelete:
		remove(out, s.at)
	}
	return nil
}

// eval evaluates a set rule's expression.
func (s step) eval(ctx context.Context, self map[string]any, budget *uint64) (any, error) {
	val, det, err := s.prg.ContextEval(ctx, map[string]any{"self": self})
	if det != nil && det.ActualCost() != nil {
		c := *det.ActualCost()
		if c > *budget {
			return nil, ErrCostExceeded
		}
		*budget -= c
	}
	if err != nil {
		return nil, err
	}
	return native(val)
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
			return nil, errors.New("the result is too large an integer")
		}
		return int64(v), nil
	case types.Double:
		return float64(v), nil
	case types.Bool:
		return bool(v), nil
	case types.Null:
		return nil, nil
	case traits.Mapper:
		return nativeMap(v)
	case traits.Lister:
		out := []any{}
		for it := v.Iterator(); it.HasNext() == types.True; {
			e, err := native(it.Next())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the result is of type %s, not a JSON value", v.Type().TypeName())
}

// nativeMap turns a CEL map into a map with string keys.
func nativeMap(v traits.Mapper) (any, error) {
	out := map[string]any{}
	for it := v.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("the result has a map key of type %s, want a string", k.Type().TypeName())
		}
		e, err := native(v.Get(k))
		if err != nil {
			return nil, err
		}
		out[string(ks)] = e
	}
	return out, nil
}
