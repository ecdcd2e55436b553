package templates

import (
	"errors"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish/conversion"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/values"
)

// The values migrations of a bundle (spec.valuesMigrations): values its
// schemas refuse are migrated, migration after migration, until they
// accept them; the parent's own values are never changed.

// migration is one of spec.valuesMigrations, compiled.
type migration struct {
	name string
	prog *conversion.Program
}

// migrationsPath is where a Bundle holds its values migrations.
var migrationsPath = field.NewPath("spec", "valuesMigrations")

// compileMigrations compiles spec.valuesMigrations: a RenderError naming
// every rule that does not compile, by field path
// (spec.valuesMigrations[i].rules[j]...), and the expression.
func compileMigrations(ms []v1alpha1.ValuesMigration) ([]migration, error) {
	out := make([]migration, 0, len(ms))
	var errs field.ErrorList
	for i, m := range ms {
		prog, bad := conversion.Compile(m.Rules, migrationsPath.Index(i).Child("rules"))
		errs = append(errs, bad...)
		out = append(out, migration{name: m.Name, prog: prog})
	}
	if len(errs) > 0 {
		return nil, &RenderError{Path: migrationsPath.String(), Msg: errs.ToAggregate().Error()}
	}
	return out, nil
}

// ValuesMigrations returns the names of the bundle's values migrations
// that MergeValues and Render apply to values, in order: nil when the
// bundle's schemas accept the values as they are. The error is
// MergeValues's: values refused, and no migration rescues them.
func ValuesMigrations(b *Bundle, v *apiextensionsv1.JSON) ([]string, error) {
	mv, err := b.merge(v)
	if err != nil {
		return nil, err
	}
	return append([]string(nil), mv.migrated...), nil
}

// migrate is the merge of values v that m refused (refusal) when the
// bundle has values migrations: each applied in order over the result of
// the one before (to v itself, not merged with values.yaml), the result
// merged and checked after each; the first that m accepts is the merge,
// with the names of the migrations applied. A migration that fails, or
// values still refused after the last, give the refusal with the
// migrations tried and why they did not help.
func (b *Bundle) migrate(m values.Merger, v *apiextensionsv1.JSON, refusal error) (map[string]any, *chart.Instance, []string, error) {
	if len(b.migrations) == 0 {
		return nil, nil, nil, refusal
	}
	doc := map[string]any{}
	if v != nil && len(v.Raw) > 0 {
		if err := utiljson.Unmarshal(v.Raw, &doc); err != nil {
			return nil, nil, nil, refusal // not an object: nothing to migrate
		}
		if doc == nil {
			doc = map[string]any{}
		}
	}
	tried := make([]string, 0, len(b.migrations))
	var last error
	for _, mig := range b.migrations {
		tried = append(tried, mig.name)
		next, err := mig.prog.Apply(doc)
		if err != nil {
			// err names the rule (spec.valuesMigrations[i].rules[j]),
			// its path and expression.
			return nil, nil, nil, migrationError(refusal, tried, fmt.Sprintf("values migration %s failed: %v", mig.name, err))
		}
		doc = next
		raw, err := utiljson.Marshal(doc)
		if err != nil {
			return nil, nil, nil, migrationError(refusal, tried,
				fmt.Sprintf("values migration %s made values that are not JSON: %v", mig.name, err))
		}
		merged, charts, err := m.Merge(&apiextensionsv1.JSON{Raw: raw})
		if err == nil {
			return merged, charts, tried, nil
		}
		last = err
	}
	return nil, nil, nil, migrationError(refusal, tried, "the migrated values are still refused: "+last.Error())
}

// migrationError is refusal, a RenderError as MergeValues gives, with the
// migrations tried and why they did not help.
func migrationError(refusal error, tried []string, why string) error {
	tail := fmt.Sprintf("values migrations tried: %s; %s", strings.Join(tried, ", "), why)
	var re *RenderError
	if !errors.As(refusal, &re) {
		return &RenderError{Path: "values", Msg: refusal.Error() + "; " + tail, Err: refusal}
	}
	out := *re
	out.Msg = re.Msg + "; " + tail
	return &out
}

// CheckValuesMigrations applies each of the bundle's values migrations,
// alone, to its values.yaml, and returns a problem for each whose result
// the bundle's schemas refuse or that fails there, naming the migration
// by its field path (spec.valuesMigrations[i]) and name. A migration runs
// only over values the schemas refuse, so a problem is a warning (`stencil
// bundle lint` prints it): a migration that cannot hold the current
// shape of the values is likely to break values half migrated by hand.
func CheckValuesMigrations(b *Bundle) []string {
	var problems []string
	for i, mig := range b.migrations {
		where := fmt.Sprintf("%s (%s)", migrationsPath.Index(i), mig.name)
		out, err := mig.prog.Apply(chart.DeepCopy(b.defaults).(map[string]any))
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s fails over values.yaml: %v", where, err))
			continue
		}
		m := values.Merger{Defaults: out, Charts: b.root, OpenAPI: b.schema, JSONSchema: b.jsonSchema}
		if _, _, err := m.Merge(nil); err != nil {
			problems = append(problems, fmt.Sprintf("%s turns values.yaml into values the schemas refuse: %v", where, err))
		}
	}
	return problems
}
