package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/publish/conversion"
	"github.com/stencil-dev/stencil/templates"
)

// NewTarget is the Target of Bundle b: its published kind's instances are
// rewritten in to (its render version when empty), which it must serve,
// with the engine's converter (publish.Converter), and its Compositions'
// values migrated with its valuesMigrations (conversion.Compile), the
// schema check being templates.MergeValues, the controller's own.
func NewTarget(b *templates.Bundle, to string) (*Target, error) {
	spec := b.Spec()
	t := &Target{Bundle: b.Name()}
	if spec.API != nil {
		api := publish.Defaulted(*spec.API)
		for _, v := range publish.Versions(api) {
			if v.Served == nil || *v.Served {
				t.Served = append(t.Served, v.Name)
			}
		}
		if to == "" {
			to = publish.RenderVersion(api)
		}
		if !slices.Contains(t.Served, to) {
			return nil, fmt.Errorf("--to %s: Bundle %s serves %v", to, b.Name(), t.Served)
		}
		conv, err := publish.Converter(b.Name(), spec)
		if err != nil {
			return nil, fmt.Errorf("the conversion of Bundle %s: %w", b.Name(), err)
		}
		t.Kind, t.To, t.Convert = schema.GroupKind{Group: api.Group, Kind: api.Kind}, to, conv.Convert
	} else if to != "" {
		return nil, fmt.Errorf("--to %s: Bundle %s publishes no kind", to, b.Name())
	}
	if len(spec.ValuesMigrations) > 0 {
		values, err := valuesMigrator(b)
		if err != nil {
			return nil, err
		}
		t.Values = values
	}
	return t, nil
}

// valuesMigrator compiles b's valuesMigrations into Target.Values.
func valuesMigrator(b *templates.Bundle) (func(map[string]any) (map[string]any, []string, error), error) {
	type step struct {
		name string
		prog *conversion.Program
	}
	var steps []step
	var errs field.ErrorList
	for i, m := range b.Spec().ValuesMigrations {
		p, es := conversion.Compile(m.Rules, field.NewPath("spec", "valuesMigrations").Index(i).Child("rules"))
		errs = append(errs, es...)
		steps = append(steps, step{m.Name, p})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the valuesMigrations of Bundle %s: %w", b.Name(), errs.ToAggregate())
	}
	// The schema check is MergeValues of the Bundle without its
	// migrations (which MergeValues would otherwise apply itself): the
	// controller's own check of values, merged over values.yaml.
	orig := b.Spec()
	spec := *orig.DeepCopy()
	spec.ValuesMigrations = nil
	plain, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: b.Name()}, Spec: spec})
	if err != nil {
		return nil, err
	}
	accepts := func(values map[string]any) error {
		raw, err := json.Marshal(values)
		if err != nil {
			return err
		}
		_, err = templates.MergeValues(plain, &apiextensionsv1.JSON{Raw: raw})
		return err
	}
	return func(values map[string]any) (map[string]any, []string, error) {
		refused := accepts(values)
		if refused == nil {
			return values, nil, nil
		}
		var applied []string
		for _, s := range steps {
			next, err := s.prog.Apply(values)
			if err != nil {
				return nil, nil, fmt.Errorf("valuesMigration %s: %w", s.name, err)
			}
			values = next
			applied = append(applied, s.name)
			if accepts(values) == nil {
				return values, applied, nil
			}
		}
		return nil, nil, errors.Join(fmt.Errorf("the Bundle's schema refuses them, and still after its valuesMigrations %v", applied), refused)
	}, nil
}
