package rollout

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// gateCostLimit bounds one evaluation of a gate, in CEL's cost units, as
// the API server bounds one validation rule's.
const gateCostLimit = celconfig.PerCallLimit

// gateEnv is the environment gates compile in: Kubernetes' CEL with one
// variable, wave.
var gateEnv = func() *cel.Env {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable("wave", cel.MapType(cel.StringType, cel.DynType))},
	})
	if err != nil {
		panic(fmt.Sprintf("rollout: CEL environment: %v", err))
	}
	return set.NewExpressionsEnv()
}()

// Gate is a compiled gate.
type Gate struct {
	Name string
	prg  cel.Program
}

// CompileGates compiles gates, naming each that does not compile with the
// line and column of the problem: the Bundle's admission refuses them,
// and a rollout waits on them (a wave is not done while a gate does not
// compile).
func CompileGates(gates []v1alpha1.RolloutGate) ([]Gate, error) {
	var out []Gate
	var problems []string
	for i, g := range gates {
		path := fmt.Sprintf("spec.rollout.gates[%d]", i)
		ast, iss := gateEnv.Compile(g.Expression)
		if iss.Err() != nil {
			for _, e := range iss.Errors() {
				problems = append(problems, fmt.Sprintf("%s (%s):%d:%d: %s", path, g.Name, e.Location.Line(), e.Location.Column()+1, e.Message))
			}
			continue
		}
		if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
			problems = append(problems, fmt.Sprintf("%s (%s): the expression's type is %s, want bool", path, g.Name, t))
			continue
		}
		prg, err := gateEnv.Program(ast, cel.CostLimit(gateCostLimit), cel.InterruptCheckFrequency(100))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s): %v", path, g.Name, err))
			continue
		}
		out = append(out, Gate{Name: g.Name, prg: prg})
	}
	if len(problems) > 0 {
		return out, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

// waveView is what gates see of a wave: wave.number, wave.total,
// wave.ready and wave.parents, each with kind, namespace, name, ready,
// revision, conditions (by type: status, reason, message) and outputs.
func waveView(number int32, bundle string, parents []*Parent) map[string]any {
	list := make([]any, 0, len(parents))
	ready := 0
	for _, p := range parents {
		conds := map[string]any{}
		for _, c := range p.Status.Conditions {
			conds[c.Type] = map[string]any{"status": string(c.Status), "reason": c.Reason, "message": c.Message}
		}
		outs := map[string]any{}
		for k, v := range p.Status.Outputs {
			var decoded any
			if err := utiljson.Unmarshal(v.Raw, &decoded); err == nil {
				outs[k] = decoded
			}
		}
		if p.Ready() {
			ready++
		}
		list = append(list, map[string]any{"kind": p.Key.Kind, "namespace": p.Key.Namespace, "name": p.Key.Name,
			"ready": p.Ready(), "revision": p.On(bundle), "conditions": conds, "outputs": outs})
	}
	return map[string]any{"number": int64(number), "total": int64(len(parents)), "ready": int64(ready), "parents": list}
}

// evaluate evaluates every gate over the wave and returns the first that
// does not hold, with why ("" when all hold).
func evaluate(ctx context.Context, gates []Gate, wave map[string]any) string {
	for _, g := range gates {
		out, _, err := g.prg.ContextEval(ctx, map[string]any{"wave": wave})
		switch {
		case err != nil:
			return fmt.Sprintf("gate %s: %v", g.Name, err)
		case out != types.True:
			return fmt.Sprintf("gate %s is %v", g.Name, out)
		}
	}
	return ""
}
