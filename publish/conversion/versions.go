package conversion

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// DefaultVersion is the version of a published kind whose api names
// none: publish.DefaultVersion (package publish imports this one).
const DefaultVersion = "v1alpha1"

// Versions lists api's versions: api.versions as written, or the single
// version form (api.version, DefaultVersion when empty) as one served
// storage version. The list is a copy.
func Versions(api v1alpha1.BundleAPI) []v1alpha1.APIVersion {
	if len(api.Versions) == 0 {
		name := api.Version
		if name == "" {
			name = DefaultVersion
		}
		return []v1alpha1.APIVersion{{Name: name, Served: ptr.To(true), Storage: true}}
	}
	out := make([]v1alpha1.APIVersion, len(api.Versions))
	for i := range api.Versions {
		api.Versions[i].DeepCopyInto(&out[i])
	}
	return out
}

// StorageVersion is the name of api's storage version ("" when none is).
func StorageVersion(api v1alpha1.BundleAPI) string {
	for _, v := range Versions(api) {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// RenderVersion is the version the templates see: api.renderVersion, or
// the storage version.
func RenderVersion(api v1alpha1.BundleAPI) string {
	if api.RenderVersion != "" {
		return api.RenderVersion
	}
	return StorageVersion(api)
}

// served reports whether v is served (true when unset).
func served(v v1alpha1.APIVersion) bool { return v.Served == nil || *v.Served }

// Validate checks api's versions and compiles their conversions: version
// and versions are exclusive, names are unique, exactly one version is
// stored and at least one served, renderVersion names a served version,
// a version has at most one of schema and schemaFile, the storage
// version has no conversion, fromStorage is set where toStorage sets a
// field with an expression, and every rule compiles (Compile's errors).
// Paths are under spec.api.
func Validate(api v1alpha1.BundleAPI) field.ErrorList {
	_, errs := compileVersions(api)
	return errs
}

// compiled is one version as the converter uses it.
type compiled struct {
	toStorage, fromStorage *Program
}

// compileVersions validates api's versions and compiles their rules.
func compileVersions(api v1alpha1.BundleAPI) (map[string]compiled, field.ErrorList) {
	root := field.NewPath("spec", "api")
	errs := checkList(api, root)
	out := map[string]compiled{}
	for i, v := range Versions(api) {
		p := root.Child("versions").Index(i)
		if v.Schema != nil && v.SchemaFile != "" {
			errs = append(errs, field.Forbidden(p.Child("schemaFile"), "at most one of schema and schemaFile"))
		}
		c, cerrs := compileVersion(v, p)
		errs = append(errs, cerrs...)
		out[v.Name] = c
	}
	return out, errs
}

// checkList checks the list of versions as a whole.
func checkList(api v1alpha1.BundleAPI, root *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(api.Versions) > 0 && api.Version != "" {
		errs = append(errs, field.Forbidden(root.Child("version"), "version and versions are exclusive: list the version in versions"))
	}
	seen := map[string]bool{}
	stored, servedCount := 0, 0
	for i, v := range Versions(api) {
		p := root.Child("versions").Index(i)
		if seen[v.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), v.Name))
		}
		seen[v.Name] = true
		if v.Storage {
			stored++
		}
		if served(v) {
			servedCount++
		}
	}
	if stored != 1 {
		errs = append(errs, field.Invalid(root.Child("versions"), nil, fmt.Sprintf("exactly one version has storage: true, not %d", stored)))
	}
	if servedCount == 0 {
		errs = append(errs, field.Invalid(root.Child("versions"), nil, "at least one version must be served"))
	}
	if rv := api.RenderVersion; rv != "" {
		found := false
		for _, v := range Versions(api) {
			if v.Name == rv {
				found = true
				if !served(v) {
					errs = append(errs, field.Invalid(root.Child("renderVersion"), rv, "names a version that is not served"))
				}
			}
		}
		if !found {
			errs = append(errs, field.NotFound(root.Child("renderVersion"), rv))
		}
	}
	return errs
}

// compileVersion compiles one version's conversion; fromStorage
// defaults to the inverse of toStorage.
func compileVersion(v v1alpha1.APIVersion, p *field.Path) (compiled, field.ErrorList) {
	var c compiled
	if v.Conversion == nil {
		return c, nil
	}
	cp := p.Child("conversion")
	if v.Storage {
		if len(v.Conversion.ToStorage)+len(v.Conversion.FromStorage) > 0 {
			return c, field.ErrorList{field.Forbidden(cp, "the storage version converts to and from itself: it has no conversion")}
		}
		return c, nil
	}
	var errs field.ErrorList
	var e field.ErrorList
	c.toStorage, e = Compile(v.Conversion.ToStorage, cp.Child("toStorage"))
	errs = append(errs, e...)
	from := v.Conversion.FromStorage
	fromPath := cp.Child("fromStorage")
	if len(from) == 0 {
		for i, r := range v.Conversion.ToStorage {
			if r.Set != nil {
				errs = append(errs, field.Required(fromPath, fmt.Sprintf("toStorage[%d] sets a field with an expression, which has no inverse: say how the storage version converts back", i)))
			}
		}
		from = inverse(v.Conversion.ToStorage)
		fromPath = cp.Child("toStorage")
	}
	c.fromStorage, e = Compile(from, fromPath)
	if len(v.Conversion.FromStorage) > 0 {
		errs = append(errs, e...)
	}
	return c, errs
}

// inverse is toStorage's moves reversed, in reverse order: the default
// fromStorage. Defaults and deletes have no inverse (what they change is
// kept by the lossless round trip's annotation).
func inverse(rules []v1alpha1.ConversionRule) []v1alpha1.ConversionRule {
	var out []v1alpha1.ConversionRule
	for i := len(rules) - 1; i >= 0; i-- {
		if m := rules[i].Move; m != nil {
			out = append(out, v1alpha1.ConversionRule{Move: &v1alpha1.FieldMove{From: m.To, To: m.From}})
		}
	}
	return out
}
