package publish

import (
	"encoding/json"
	"errors"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish/conversion"
)

// Versions lists api's versions: api.versions as written, or the single
// version form (api.version, DefaultVersion when empty) as one served
// storage version. The list is a copy.
func Versions(api v1alpha1.BundleAPI) []v1alpha1.APIVersion { return conversion.Versions(api) }

// StorageVersion is the name of api's storage version ("" when no
// version is marked storage).
func StorageVersion(api v1alpha1.BundleAPI) string { return conversion.StorageVersion(api) }

// RenderVersion is the version whose spec the templates see:
// api.renderVersion, or the storage version.
func RenderVersion(api v1alpha1.BundleAPI) string { return conversion.RenderVersion(api) }

// ValidateVersions checks api's versions (Validate calls it): version
// and versions are exclusive, names are unique, exactly one version is
// stored and at least one served, renderVersion names a served version,
// a version has at most one of schema and schemaFile, the storage
// version has no conversion, fromStorage is set where toStorage sets a
// field with an expression, and every conversion rule compiles (its CEL
// within the cost bounds). Paths are under spec.api.
func ValidateVersions(api v1alpha1.BundleAPI) field.ErrorList { return conversion.Validate(api) }

// VersionSchemas is each version's spec schema, by version name: the
// version's schema (OpenAPI, as spec.schema is read), or its schemaFile
// (a JSON Schema file of the bundle, converted as values.schema.json
// is), or else the Bundle's values schema. What values.yaml provides is
// not required of any. A schema that cannot be a CRD's is an *Error
// (ReasonNotStructural) naming spec.api.versions[i].schema or the file.
func VersionSchemas(bundleName string, spec v1alpha1.BundleSpec) (map[string]*apiextensionsv1.JSONSchemaProps, error) {
	if spec.API == nil {
		return nil, errors.New("the bundle publishes no kind: spec.api is not set")
	}
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	var values *apiextensionsv1.JSONSchemaProps
	defaults, err := valuesDefaults(spec.Files)
	if err != nil {
		return nil, err
	}
	for i, v := range Versions(*spec.API) {
		p := field.NewPath("spec", "api", "versions").Index(i)
		var s *apiextensionsv1.JSONSchemaProps
		switch {
		case v.Schema != nil && len(v.Schema.Raw) > 0:
			s = &apiextensionsv1.JSONSchemaProps{}
			if err := json.Unmarshal(v.Schema.Raw, s); err != nil {
				return nil, notStructural(field.Invalid(p.Child("schema"), nil, "not an OpenAPI v3 schema: "+jsonErrorRule(err)))
			}
			if err := objectType(s, p.Child("schema")); err != nil {
				return nil, err
			}
		case v.SchemaFile != "":
			if s, err = schemaFile(spec.Files, v.SchemaFile, p.Child("schemaFile")); err != nil {
				return nil, err
			}
		default:
			if values == nil {
				if values, _, err = valuesSchema(spec); err != nil {
					return nil, err
				}
			}
			out[v.Name] = values.DeepCopy()
			continue
		}
		relaxRequired(s, defaults)
		out[v.Name] = s
	}
	return out, nil
}

// schemaFile converts a version's JSON Schema file; its errors name the
// file in place of values.schema.json.
func schemaFile(files map[string]string, name string, p *field.Path) (*apiextensionsv1.JSONSchemaProps, error) {
	text, ok := files[name]
	if !ok {
		return nil, notStructural(field.NotFound(p, name))
	}
	s, errs := convertJSONSchema(text)
	if len(errs) > 0 {
		for _, e := range errs {
			if rest, ok := strings.CutPrefix(e.Field, sourceJSONSchema); ok {
				e.Field = name + rest
			}
		}
		return nil, &Error{Reason: ReasonNotStructural, Errs: errs}
	}
	return s, objectType(s, field.NewPath(name, "type"))
}

// objectType requires a spec's schema to be of an object (the type
// object when unset).
func objectType(s *apiextensionsv1.JSONSchemaProps, p *field.Path) error {
	switch s.Type {
	case "":
		s.Type = "object"
	case "object":
	default:
		return notStructural(field.Invalid(p, nil, "a spec is an object: the schema's type must be object"))
	}
	return nil
}

// Converter builds the converter of the kind the Bundle publishes, from
// its versions and their schemas (VersionSchemas). A problem of the
// versions or their conversions is an *Error (ReasonInvalidAPI) naming
// field paths under spec.api; one of the schemas, an *Error
// (ReasonNotStructural).
func Converter(bundleName string, spec v1alpha1.BundleSpec) (*conversion.Converter, error) {
	if spec.API == nil {
		return nil, errors.New("the bundle publishes no kind: spec.api is not set")
	}
	if errs := ValidateVersions(*spec.API); len(errs) > 0 {
		return nil, &Error{Reason: ReasonInvalidAPI, Errs: errs}
	}
	schemas, err := VersionSchemas(bundleName, spec)
	if err != nil {
		return nil, err
	}
	c, err := conversion.New(*spec.API, schemas)
	var ie *conversion.InvalidError
	if errors.As(err, &ie) {
		return nil, &Error{Reason: ReasonInvalidAPI, Errs: ie.Errs}
	}
	if err != nil {
		return nil, notStructural(field.Invalid(field.NewPath("spec", "api", "versions"), nil, err.Error()))
	}
	return c, nil
}
