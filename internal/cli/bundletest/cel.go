package bundletest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// maxExpressionLength bounds a cel assertion's source, in bytes, as
// package outputs bounds a status output's.
const maxExpressionLength = 8 << 10

// celEnv is the environment cel assertions compile in: Kubernetes' CEL
// (the libraries of a CRD's validation rules, as status outputs and
// conversion rules use) with objects and members.
var celEnv = func() *cel.Env {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("objects", cel.ListType(cel.DynType)),
			cel.Variable("members", cel.MapType(cel.StringType, cel.DynType)),
		},
	})
	if err != nil {
		panic(fmt.Sprintf("bundletest: CEL environment: %v", err))
	}
	return set.NewExpressionsEnv()
}()

// compileCEL compiles a cel assertion's expression, of type bool; each
// evaluation is bounded at the API server's per-call cost limit.
func compileCEL(expr string) (cel.Program, error) {
	switch {
	case strings.TrimSpace(expr) == "":
		return nil, errors.New("empty")
	case len(expr) > maxExpressionLength:
		return nil, fmt.Errorf("longer than %d bytes", maxExpressionLength)
	}
	ast, iss := celEnv.Compile(expr)
	if iss.Err() != nil {
		var lines []string
		for _, ce := range iss.Errors() {
			lines = append(lines, fmt.Sprintf("%d:%d: %s", ce.Location.Line(), ce.Location.Column()+1, ce.Message))
		}
		return nil, errors.New(strings.Join(lines, "; "))
	}
	if t := ast.OutputType(); t.Kind() != types.DynKind && t.Kind() != types.BoolKind {
		return nil, fmt.Errorf("the expression's type is %s, want bool", t)
	}
	return celEnv.Program(ast, cel.CostLimit(celconfig.PerCallLimit), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
}

// evalCEL evaluates prg over the rendered objects.
func evalCEL(ctx context.Context, prg cel.Program, objects []any, members map[string]any) (bool, error) {
	out, _, err := prg.ContextEval(ctx, map[string]any{"objects": objects, "members": members})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the value is %s, want a bool", out.Type())
	}
	return b, nil
}
