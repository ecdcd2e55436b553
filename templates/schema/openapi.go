package schema

import (
	"encoding/json"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/templates/fault"
)

// OpenAPI is a bundle's values schema: the API server's own structural
// schema defaulting and validation, as for a CRD's openAPIV3Schema.
type OpenAPI struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

// schemaCache holds the schemas compiled last (newOpenAPI), by
// their JSON text: a new revision of a bundle usually keeps its schema,
// and compiling one (structural schema, validator) costs more than
// parsing the bundle's templates. A compiled schema is read only, shared
// as the API server shares a CRD's between requests.
var schemaCache struct {
	sync.Mutex
	m map[string]*OpenAPI
}

// schemaCacheSize bounds schemaCache; past it, one entry is dropped.
const schemaCacheSize = 64

// NewOpenAPI compiles a Bundle's spec.schema (nil for none), or returns
// the one compiled last from the same text; an error names spec.schema.
func NewOpenAPI(raw *apiextensionsv1.JSON) (*OpenAPI, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	schemaCache.Lock()
	cached := schemaCache.m[string(raw.Raw)]
	schemaCache.Unlock()
	if cached != nil {
		return cached, nil
	}
	vs, err := compileOpenAPI(raw)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	defer schemaCache.Unlock()
	if schemaCache.m == nil {
		schemaCache.m = map[string]*OpenAPI{}
	}
	if len(schemaCache.m) >= schemaCacheSize {
		for k := range schemaCache.m {
			delete(schemaCache.m, k)
			break
		}
	}
	schemaCache.m[string(raw.Raw)] = vs
	return vs, nil
}

func compileOpenAPI(raw *apiextensionsv1.JSON) (*OpenAPI, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw.Raw, &v1); err != nil {
		return nil, &fault.RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, &fault.RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, &fault.RenderError{Path: "spec.schema", Msg: "schema is not structural: " + err.Error(), Err: err}
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("schema"), s); len(errs) > 0 {
		return nil, &fault.RenderError{Path: "spec.schema", Msg: "schema is not structural: " + errs.ToAggregate().Error()}
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, &fault.RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	return &OpenAPI{structural: s, validator: validator}, nil
}

// violation writes a schema violation from its field path, its type and
// the rule, never its value (field.Error's own message quotes BadValue,
// and values hold secrets). The structural validator's details are the
// rule ("should be greater than or equal to 1", "supported values: ...",
// "should match '^[a-z]+$'"), except that a failed format adds the value
// (`must be of type date-time: "..."`) and a failed format parser its
// error: those parts are cut.
func violation(e *field.Error) string {
	detail := e.Detail
	if i := strings.Index(detail, ": \""); i >= 0 && strings.Contains(detail, " must be of type ") {
		detail = detail[:i]
	}
	if i := strings.Index(detail, ", because: "); i >= 0 {
		detail = detail[:i]
	}
	// "replicas in body should be ..." repeats the path.
	if i := strings.Index(detail, " in body "); i >= 0 {
		detail = detail[i+len(" in body "):]
	}
	msg := e.Field + ": " + e.Type.String()
	if detail != "" {
		msg += ": " + detail
	}
	return msg
}

// DefaultAndValidate defaults values in place with the schema, as the API
// server defaults a custom resource, and returns its violations, each
// "path: type: rule", never quoting a value, in the validator's order.
func (s *OpenAPI) DefaultAndValidate(values map[string]any) []string {
	defaulting.Default(values, s.structural)
	var msgs []string
	for _, e := range validation.ValidateCustomResource(valuesRoot, values, s.validator) {
		msgs = append(msgs, violation(e))
	}
	return msgs
}
