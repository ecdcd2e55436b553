package publish

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// valuesFile holds a bundle's default values.
const valuesFile = "values.yaml"

// valuesDefaults parses the bundle's values.yaml ({} when it has none).
func valuesDefaults(files map[string]string) (map[string]any, error) {
	text, ok := files[valuesFile]
	if !ok {
		return nil, nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		return nil, notStructural(field.Invalid(field.NewPath(valuesFile), nil, "not a YAML map of values"))
	}
	return m, nil
}

// relaxRequired drops from every object's required list the properties
// values.yaml gives a value: rendering merges values.yaml under the
// instance's spec (maps deep), so an instance need not repeat them, as a
// Composition need not. It walks properties only: a list in values.yaml
// is replaced whole by an instance's, so items stay as strict as written.
func relaxRequired(s *apiextensionsv1.JSONSchemaProps, defaults map[string]any) {
	if s == nil || len(defaults) == 0 {
		return
	}
	s.Required = slices.DeleteFunc(s.Required, func(name string) bool {
		v, ok := defaults[name]
		return ok && v != nil
	})
	if len(s.Required) == 0 {
		s.Required = nil
	}
	for name, p := range s.Properties {
		if sub, ok := defaults[name].(map[string]any); ok {
			relaxRequired(&p, sub)
			s.Properties[name] = p
		}
	}
}
