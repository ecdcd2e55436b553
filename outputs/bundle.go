package outputs

import (
	"fmt"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// FromBundle compiles a Bundle's spec.outputs and spec.readiness in env;
// errors name spec.outputs[i] and spec.readiness[i]. A Bundle that
// declares neither gives an empty Set.
func FromBundle(env Environment, spec v1alpha1.BundleSpec) (*Set, error) {
	outs := make([]Output, len(spec.Outputs))
	for i, o := range spec.Outputs {
		outs[i] = Output{Name: o.Name, Type: o.Type, Value: o.Value, Path: fmt.Sprintf("spec.outputs[%d]", i)}
	}
	rules := make([]Rule, len(spec.Readiness))
	for i, r := range spec.Readiness {
		rules[i] = Rule{Member: r.Member, ReadyWhen: r.ReadyWhen, Path: fmt.Sprintf("spec.readiness[%d]", i)}
	}
	return Compile(env, outs, rules)
}

// Empty reports whether the set declares nothing.
func (s *Set) Empty() bool { return s == nil || len(s.outputs) == 0 && len(s.rules) == 0 }

// HasOutputs reports whether any output is declared.
func (s *Set) HasOutputs() bool { return s != nil && len(s.outputs) > 0 }
