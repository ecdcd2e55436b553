package publish

import (
	"fmt"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// apiPath is where a Bundle holds its api.
var apiPath = field.NewPath("spec", "api")

var (
	kindRE    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
)

// columnTypes are the types a CRD printer column may have.
var columnTypes = sets.New("integer", "number", "string", "boolean", "date")

// Validate checks a Bundle's api as written (before Defaulted) and
// returns every problem with its field path under spec.api. The messages
// say the rule broken; they quote a value only where it is one of the
// api's own names.
func Validate(api v1alpha1.BundleAPI) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateGroup(api.Group, apiPath.Child("group"))...)
	switch {
	case api.Kind == "":
		errs = append(errs, field.Required(apiPath.Child("kind"), "the published kind's name, such as AppService"))
	case len(api.Kind) > validation.DNS1035LabelMaxLength || !kindRE.MatchString(api.Kind):
		errs = append(errs, field.Invalid(apiPath.Child("kind"), api.Kind, "must be CamelCase: an upper-case letter, then letters and digits, at most 63 characters"))
	}
	errs = append(errs, validVersion(api.Version, apiPath.Child("version"))...)
	errs = append(errs, validateVersions(api)...)
	if api.Plural != "" {
		errs = append(errs, dnsLabel(api.Plural, apiPath.Child("plural"))...)
	} else if api.Kind != "" && len(Plural(api.Kind)) > validation.DNS1035LabelMaxLength {
		errs = append(errs, field.Invalid(apiPath.Child("kind"), api.Kind, "too long for its plural to be a resource name: set plural"))
	}
	errs = append(errs, nameList(api.ShortNames, apiPath.Child("shortNames"))...)
	errs = append(errs, nameList(api.Categories, apiPath.Child("categories"))...)
	errs = append(errs, validateColumns(api.PrinterColumns, apiPath.Child("printerColumns"))...)
	errs = append(errs, deletionPolicy(api.DeletionPolicy, apiPath.Child("deletionPolicy"))...)
	d := apiPath.Child("defaults")
	errs = append(errs, deletionPolicy(api.Defaults.DeletionPolicy, d.Child("deletionPolicy"))...)
	if sa := api.Defaults.ServiceAccountName; sa != "" {
		for _, msg := range validation.IsDNS1123Subdomain(sa) {
			errs = append(errs, field.Invalid(d.Child("serviceAccountName"), sa, msg))
		}
	}
	return errs
}

// validVersion checks a version's name ("" is valid: unset).
func validVersion(v string, p *field.Path) field.ErrorList {
	if v != "" && (len(v) > validation.DNS1035LabelMaxLength || !versionRE.MatchString(v)) {
		return field.ErrorList{field.Invalid(p, v, "must be a Kubernetes API version such as v1, v2beta1 or v1alpha1")}
	}
	return nil
}

// validateColumns checks a list of printer columns: names unique, each
// valid (validateColumn).
func validateColumns(cols []apiextensionsv1.CustomResourceColumnDefinition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range cols {
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Index(i).Child("name"), c.Name))
		}
		names.Insert(c.Name)
		errs = append(errs, validateColumn(c, p.Index(i))...)
	}
	return errs
}

// validateVersions checks the several-versions form: what
// ValidateVersions checks (version and versions exclusive, names unique,
// exactly one storage version, renderVersion a served version, at most
// one of schema and schemaFile, the conversions compile), and each
// version's name and printer columns, a deprecationWarning only on a
// deprecated version, and, with no renderVersion, a served storage
// version (it is the one the templates see).
func validateVersions(api v1alpha1.BundleAPI) field.ErrorList {
	errs := ValidateVersions(api)
	vp := apiPath.Child("versions")
	for i, v := range api.Versions {
		p := vp.Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "the version, such as v1"))
		}
		errs = append(errs, validVersion(v.Name, p.Child("name"))...)
		errs = append(errs, validateColumns(v.PrinterColumns, p.Child("printerColumns"))...)
		if v.DeprecationWarning != "" && !v.Deprecated {
			errs = append(errs, field.Forbidden(p.Child("deprecationWarning"), "only a deprecated version warns: set deprecated: true"))
		}
		if v.Storage && api.RenderVersion == "" && !served(v) {
			errs = append(errs, field.Invalid(p.Child("served"), false, "the storage version renders (no renderVersion names another) and must be served: the controller reads instances in it"))
		}
	}
	return errs
}

// validateGroup: a DNS-1123 subdomain with a dot, not stencil's own. A
// group of Kubernetes' own (ReservedGroup) is valid here: the Bundle
// controller serves a kind there only on a cluster admin's say, never on
// the Bundle's.
func validateGroup(group string, p *field.Path) field.ErrorList {
	if group == "" {
		return field.ErrorList{field.Required(p, "the published kind's API group, such as app.example.com")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(group) {
		errs = append(errs, field.Invalid(p, group, msg))
	}
	if !strings.Contains(group, ".") {
		errs = append(errs, field.Invalid(p, group, "must contain a dot, as a CRD's group must (such as app.example.com)"))
	}
	if group == v1alpha1.GroupVersion.Group || strings.HasSuffix(group, "."+v1alpha1.GroupVersion.Group) {
		errs = append(errs, field.Invalid(p, group, "stencil.dev and its subdomains are stencil's own"))
	}
	return errs
}

// dnsLabel checks a resource name, short name or category: the API
// server requires DNS-1035 labels.
func dnsLabel(s string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1035Label(s) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}

func nameList(names []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, n := range names {
		if seen.Has(n) {
			errs = append(errs, field.Duplicate(p.Index(i), n))
		}
		seen.Insert(n)
		errs = append(errs, dnsLabel(n, p.Index(i))...)
	}
	return errs
}

func deletionPolicy(p v1alpha1.DeletionPolicy, path *field.Path) field.ErrorList {
	switch p {
	case "", v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, []v1alpha1.DeletionPolicy{v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan})}
}

// validateColumn checks what a printer column needs before the API server
// would look at it; reserved names are refused so Ready and Age (which
// every published kind shows) are not shown twice. A column named Status
// takes the place of stencil's (n/m ready), as the articles' kinds showed
// their phase there.
func validateColumn(c apiextensionsv1.CustomResourceColumnDefinition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch c.Name {
	case "":
		errs = append(errs, field.Required(p.Child("name"), "the column's heading"))
	case "Ready", "Age":
		errs = append(errs, field.Invalid(p.Child("name"), c.Name, fmt.Sprintf("every published kind shows a %s column already", c.Name)))
	}
	if !columnTypes.Has(c.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), c.Type, sets.List(columnTypes)))
	}
	if !strings.HasPrefix(c.JSONPath, ".") {
		errs = append(errs, field.Invalid(p.Child("jsonPath"), c.JSONPath, "must be a JSON path starting with a dot, such as .spec.image"))
	}
	return errs
}

// ReservedGroup says whether group is Kubernetes' own: k8s.io,
// kubernetes.io or a subdomain of either, where the API server accepts a
// CRD only with AnnotationAPIApproved. stencil never makes the CRD of a
// published kind in such a group, and applies one only where a cluster
// admin made it, approved, and labelled it for the Bundle (see package
// reconcile/published). A CRD a Bundle renders there is applied as the
// parent's account, as any rendered CRD, unless it carries LabelBundle,
// the admin's opt-in, which no render gives (see reconcile/plan).
func ReservedGroup(group string) bool {
	for _, d := range []string{"k8s.io", "kubernetes.io"} {
		if group == d || strings.HasSuffix(group, "."+d) {
			return true
		}
	}
	return false
}
