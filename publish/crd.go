package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Reasons of an *Error: the API's reasons of a Bundle's Ready=False,
// which the Bundle controller reports as they are.
const (
	// ReasonInvalidAPI: spec.api (or the Bundle's name) cannot name a CRD.
	ReasonInvalidAPI = v1alpha1.ReasonInvalidAPI
	// ReasonNotStructural: the values schema cannot be a CRD's schema.
	ReasonNotStructural = v1alpha1.ReasonNotStructural
)

// Labels and annotations of the CRD of a published kind.
const (
	// LabelApplySetParentType marks the kind as one whose objects may be
	// ApplySet parents, as kubectl requires of a parent's CRD.
	LabelApplySetParentType = "applyset.kubernetes.io/is-parent-type"
	// AnnotationAPIApproved is what the API server requires of a CRD in
	// a group of Kubernetes' own (see ReservedGroup): a URL of the
	// approving review, or a value starting with "unapproved". The CRD
	// stencil builds never carries it: it is the cluster admin's say,
	// on a CRD the admin made (see package reconcile/published).
	AnnotationAPIApproved = "api-approved.kubernetes.io"
)

// Error is a published kind's CRD that the API server would refuse, or
// could not be built. Errs name field paths of the Bundle (spec.api...,
// spec.schema..., values.schema.json...) and the rules broken; the
// message never quotes a value.
type Error struct {
	// Reason is ReasonInvalidAPI or ReasonNotStructural.
	Reason string
	// Errs are the problems, each with its field path.
	Errs field.ErrorList
}

// Error lists every problem as "path: type: rule".
func (e *Error) Error() string {
	what := "the published kind's api is invalid"
	if e.Reason == ReasonNotStructural {
		what = "the values schema cannot be the published kind's schema"
	}
	items := make([]string, 0, len(e.Errs))
	for _, fe := range e.Errs {
		s := fe.Field + ": " + fe.Type.String()
		if d := strings.TrimSpace(fe.Detail); d != "" {
			s += ": " + d
		}
		items = append(items, s)
	}
	return what + ": " + strings.Join(items, "; ")
}

// Paths the values schema comes from, the roots of its errors.
const (
	sourceSchema     = "spec.schema"
	sourceJSONSchema = "values.schema.json"
)

// CRD builds the CustomResourceDefinition of the kind a Bundle publishes
// (spec.api must be set) and checks it as the API server's create
// validation does: names, the structural schema, its defaults and CEL
// rules, printer columns. A problem is an *Error; nothing else fails.
//
// The CRD is namespaced, with the status subresource, and has one CRD
// version per version of the api (the single-version form: one served and
// stored version). Each version's schema is {apiVersion, kind, metadata,
// spec, status}: spec is the version's schema (its schema, else its
// schemaFile converted from JSON Schema, else the values schema:
// spec.schema; else values.schema.json converted from JSON Schema; else
// any object), with what values.yaml provides not required where the
// spec is the values' (the render version's and the values schema's);
// status is a Composition's status, the same in every version. Its
// printer columns are the version's (else spec.api.printerColumns), then
// Ready, Status (unless the version has a column of that name, which
// takes its place) and Age. It is labelled LabelApplySetParentType and
// LabelBundle.
//
// With more than one version, spec.conversion is a Webhook
// (conversionReviewVersions [v1]) whose clientConfig is nil: the
// controller fills it in with where it serves its conversion webhook
// (ConversionPath, with the CRD's token), since the CRD stays pure here.
func CRD(bundleName string, spec v1alpha1.BundleSpec) (*apiextensionsv1.CustomResourceDefinition, error) {
	if spec.API == nil {
		return nil, errors.New("the bundle publishes no kind: spec.api is not set")
	}
	errs := Validate(*spec.API)
	for _, msg := range validation.IsValidLabelValue(bundleName) {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), bundleName, "labels the CRD of the kind it publishes: "+msg))
	}
	if len(errs) > 0 {
		return nil, &Error{Reason: ReasonInvalidAPI, Errs: errs}
	}
	api := Defaulted(*spec.API)
	specs, sources, err := versionSpecs(bundleName, spec, api)
	if err != nil {
		return nil, err
	}
	if errs := checkOutputs(spec.Outputs); len(errs) > 0 {
		return nil, &Error{Reason: ReasonInvalidAPI, Errs: errs}
	}
	crd := build(bundleName, api, specs, spec.Outputs)
	if err := check(crd, api, sources); err != nil {
		return nil, err
	}
	return crd, nil
}

// ConversionWebhookPath is where the controller serves the conversion
// webhook of the published kinds with several versions: the prefix of
// the path of the clientConfig of their CRDs' spec.conversion.webhook,
// ConversionPath(token).
const ConversionWebhookPath = "/convert"

// ConversionTokenBytes is the number of random bytes of a CRD's
// conversion token; the token is their lowercase hex.
const ConversionTokenBytes = 32

// ConversionPath is the path of a CRD's conversion webhook with token:
// ConversionWebhookPath/token. Whoever presents the token in the path
// is taken for the API server converting that CRD's objects (package
// conversion): the API server presents no client certificate to a
// conversion webhook.
func ConversionPath(token string) string {
	return ConversionWebhookPath + "/" + token
}

// ParseConversionPath is the token of path, when path is
// ConversionPath(token) with a token of ConversionTokenBytes in
// lowercase hex.
func ParseConversionPath(path string) (token string, ok bool) {
	token, ok = strings.CutPrefix(path, ConversionWebhookPath+"/")
	if !ok || len(token) != 2*ConversionTokenBytes {
		return "", false
	}
	for _, c := range token {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return token, true
}

// ConversionToken is the token of crd's conversion webhook, when its
// clientConfig's path (its Service's path, or its URL's) is
// ConversionPath(token).
func ConversionToken(crd *apiextensionsv1.CustomResourceDefinition) (token string, ok bool) {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return "", false
	}
	switch cc := c.Webhook.ClientConfig; {
	case cc.Service != nil && cc.Service.Path != nil:
		return ParseConversionPath(*cc.Service.Path)
	case cc.URL != nil:
		u, err := neturl.Parse(*cc.URL)
		if err != nil {
			return "", false
		}
		return ParseConversionPath(u.Path)
	}
	return "", false
}

// versionSpecs are the spec schemas of api's versions, in order
// (VersionSchemas), and the Bundle field each comes from ("" when it is
// any object).
func versionSpecs(bundleName string, spec v1alpha1.BundleSpec, api v1alpha1.BundleAPI) ([]*apiextensionsv1.JSONSchemaProps, []string, error) {
	byName, err := VersionSchemas(bundleName, spec)
	if err != nil {
		return nil, nil, err
	}
	_, valuesSource, err := valuesSchema(spec)
	if err != nil {
		return nil, nil, err
	}
	versions := Versions(api)
	specs := make([]*apiextensionsv1.JSONSchemaProps, len(versions))
	sources := make([]string, len(versions))
	for i, v := range versions {
		s, source := byName[v.Name], valuesSource
		switch {
		case v.Schema != nil && len(v.Schema.Raw) > 0:
			source = apiPath.Child("versions").Index(i).Child("schema").String()
		case v.SchemaFile != "":
			source = v.SchemaFile
		}
		if s == nil {
			s = &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		}
		if s.Description == "" {
			s.Description = fmt.Sprintf("spec is the values stencil Bundle %s renders, merged over its values.yaml.", bundleName)
			if source != valuesSource && v.Name != api.Version {
				s.Description = fmt.Sprintf("spec is the spec of version %s; stencil converts it to version %s, the one stencil Bundle %s renders.", v.Name, api.Version, bundleName)
			}
		}
		specs[i], sources[i] = s, source
	}
	return specs, sources, nil
}

// build assembles the CRD: one CRD version per version of the api, each
// with its own spec schema (specs, in the same order).
func build(bundleName string, api v1alpha1.BundleAPI, specs []*apiextensionsv1.JSONSchemaProps, outs []v1alpha1.BundleOutput) *apiextensionsv1.CustomResourceDefinition {
	status := instanceStatusSchema(outs)
	versions := Versions(api)
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   api.Plural + "." + api.Group,
			Labels: map[string]string{LabelApplySetParentType: "true", LabelBundle: bundleName},
		},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: api.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: api.Kind, ListKind: api.Kind + "List", Plural: api.Plural, Singular: strings.ToLower(api.Kind),
				ShortNames: api.ShortNames, Categories: api.Categories,
			},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		cols := v.PrinterColumns
		if len(cols) == 0 {
			cols = api.PrinterColumns
		}
		cv := apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v.Name, Served: served(v), Storage: v.Storage, Deprecated: v.Deprecated,
			Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: rootSchema(bundleName, api.Kind, specs[i], *status.DeepCopy())},
			Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			AdditionalPrinterColumns: columns(cols),
		}
		if v.DeprecationWarning != "" {
			cv.DeprecationWarning = ptr.To(v.DeprecationWarning)
		}
		crd.Spec.Versions = append(crd.Spec.Versions, cv)
	}
	if len(versions) > 1 {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook:  &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}},
		}
	}
	return crd
}

// rootSchema is a version's openAPIV3Schema: spec as given, stencil's
// status.
func rootSchema(bundleName, kind string, spec *apiextensionsv1.JSONSchemaProps, status apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	root := &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Description: fmt.Sprintf("%s is published by stencil Bundle %s: stencil renders the Bundle with spec as its values, "+
			"keeps the result applied as an ApplySet whose parent is this object, and reports its readiness in status.", kind, bundleName),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string", Description: "APIVersion defines the versioned schema of this representation of an object."},
			"kind":       {Type: "string", Description: "Kind is a string value representing the REST resource this object represents."},
			"metadata":   {Type: "object"},
			"spec":       *spec,
			"status":     status,
		},
	}
	if len(spec.Required) > 0 {
		root.Required = []string{"spec"}
	}
	return root
}

// columns are a version's printer columns: own, then stencil's Ready and
// Status (unless own has a column of that name, which takes its place:
// the article's Status, a phase), then Age.
func columns(own []apiextensionsv1.CustomResourceColumnDefinition) []apiextensionsv1.CustomResourceColumnDefinition {
	cols := append([]apiextensionsv1.CustomResourceColumnDefinition{}, own...)
	for _, c := range statusColumns() {
		if !slices.ContainsFunc(own, func(p apiextensionsv1.CustomResourceColumnDefinition) bool { return p.Name == c.Name }) {
			cols = append(cols, c)
		}
	}
	return append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"})
}

// instanceStatusSchema is an instance's status schema: a Composition's,
// with the Bundle's outputs at its top instead of under outputs.
func instanceStatusSchema(outs []v1alpha1.BundleOutput) apiextensionsv1.JSONSchemaProps {
	status := StatusSchema()
	delete(status.Properties, "outputs")
	for _, o := range outs {
		p := apiextensionsv1.JSONSchemaProps{Type: o.Type, Description: o.Description}
		if p.Description == "" {
			p.Description = o.Name + " is computed by stencil from the members: " + o.Value
		}
		switch o.Type {
		case "object":
			p.XPreserveUnknownFields = ptr.To(true)
		case "array":
			p.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr.To(true)}}
		}
		status.Properties[o.Name] = p
	}
	return status
}

// checkOutputs refuses an output whose name is a field of stencil's own
// status (conditions, members, ...): an instance holds its outputs at the
// top of its status, beside them.
func checkOutputs(outs []v1alpha1.BundleOutput) field.ErrorList {
	var errs field.ErrorList
	own := StatusSchema().Properties
	for i, o := range outs {
		if _, taken := own[o.Name]; taken {
			errs = append(errs, field.Invalid(field.NewPath("spec", "outputs").Index(i).Child("name"), o.Name, "is a field of stencil's own status: choose another name"))
		}
	}
	return errs
}

// valuesSchema is the schema of an instance's spec and the Bundle field
// it comes from ("" when the bundle has no schema).
func valuesSchema(spec v1alpha1.BundleSpec) (*apiextensionsv1.JSONSchemaProps, string, error) {
	var s *apiextensionsv1.JSONSchemaProps
	var source string
	switch text, hasJSON := spec.Files[sourceJSONSchema]; {
	case spec.Schema != nil && len(spec.Schema.Raw) > 0:
		source = sourceSchema
		var err error
		if s, err = openAPISchema(spec.Schema.Raw, sourceSchema); err != nil {
			return nil, "", err
		}
	case hasJSON:
		source = sourceJSONSchema
		var errs field.ErrorList
		if s, errs = convertJSONSchema(text); len(errs) > 0 {
			return nil, "", &Error{Reason: ReasonNotStructural, Errs: errs}
		}
	default:
		t := true
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &t}, "", nil
	}
	if err := objectSchema(s, source); err != nil {
		return nil, "", err
	}
	defaults, err := valuesDefaults(spec.Files)
	if err != nil {
		return nil, "", err
	}
	relaxRequired(s, defaults)
	return s, source, nil
}

// openAPISchema parses an OpenAPI v3 schema written at source.
func openAPISchema(raw []byte, source string) (*apiextensionsv1.JSONSchemaProps, error) {
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, notStructural(field.Invalid(field.NewPath(source), nil, "not an OpenAPI v3 schema: "+jsonErrorRule(err)))
	}
	return s, nil
}

// objectSchema makes s, a spec's schema, an object's: its type is object
// or unset (then set).
func objectSchema(s *apiextensionsv1.JSONSchemaProps, source string) error {
	switch s.Type {
	case "":
		s.Type = "object"
	case "object":
	default:
		return notStructural(field.Invalid(field.NewPath(source, "type"), nil, "the values are an object: the schema's type must be object"))
	}
	return nil
}

func notStructural(errs ...*field.Error) *Error {
	return &Error{Reason: ReasonNotStructural, Errs: errs}
}

// jsonErrorRule describes a JSON decoding error without the text it read.
func jsonErrorRule(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must not be a JSON %s", te.Field, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("JSON syntax error at byte %d", se.Offset)
	}
	return "not a JSON object"
}

// check validates the CRD as the API server does on create, and maps the
// problems back to the Bundle's fields.
func check(crd *apiextensionsv1.CustomResourceDefinition, api v1alpha1.BundleAPI, sources []string) error {
	v1 := crd.DeepCopy()
	if c := v1.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig == nil {
		// The controller's to fill in: checked as if it had.
		c.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://stencil.invalid" + ConversionPath(strings.Repeat("0", 2*ConversionTokenBytes)))}
	}
	if ReservedGroup(v1.Spec.Group) {
		// The API server requires an approval of such a CRD: the
		// admin's, on the live CRD, never one the Bundle gives. Checked
		// as approved, so the rest of the CRD is checked all the same.
		metav1.SetMetaDataAnnotation(&v1.ObjectMeta, AnnotationAPIApproved, "unapproved, checked by stencil")
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
	var internal apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, &internal, nil); err != nil {
		return &Error{Reason: ReasonInvalidAPI, Errs: field.ErrorList{field.InternalError(field.NewPath("spec", "api"), err)}}
	}
	errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
	if len(errs) == 0 {
		return nil
	}
	reason := ReasonNotStructural
	out := make(field.ErrorList, 0, len(errs))
	for _, fe := range errs {
		path, inSchema := bundlePath(fe.Field, api, sources)
		if !inSchema {
			reason = ReasonInvalidAPI
		}
		out = append(out, &field.Error{Type: fe.Type, Field: path, Detail: fe.Detail})
	}
	return &Error{Reason: reason, Errs: out}
}
