package publish

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// LabelBundle labels the CRD of a published kind with the name of the
// Bundle that publishes it.
const LabelBundle = "stencil.dev/bundle"

// Annotations an instance of a published kind may carry to override the
// Bundle's spec.api.defaults.
const (
	// AnnotationSuspend is "true" or "false": spec.suspend of a Composition.
	AnnotationSuspend = "stencil.dev/suspend"
	// AnnotationPrune is "true" or "false": spec.prune of a Composition.
	AnnotationPrune = "stencil.dev/prune"
	// AnnotationDeletionPolicy is Delete or Orphan: spec.deletionPolicy of
	// a Composition, what happens to the children when the instance goes.
	AnnotationDeletionPolicy = "stencil.dev/deletion-policy"
	// AnnotationServiceAccountName names a ServiceAccount of the instance's
	// namespace: spec.serviceAccountName of a Composition.
	AnnotationServiceAccountName = "stencil.dev/service-account-name"
	// AnnotationBundleRevision pins an instance to a revision of its
	// Bundle (a BundleRevision name), as a Composition's
	// spec.bundleRevision does.
	AnnotationBundleRevision = "stencil.dev/bundle-revision"
)

// DefaultVersion is the version of a published kind whose api names none.
const DefaultVersion = "v1alpha1"

// Defaulted returns a copy of api with the version, the plural (Plural
// of the kind) and the CRD's deletion policy (Orphan) filled in when
// empty. The version is the render version (RenderVersion): in the
// single-version form, version or DefaultVersion; with versions, the
// version the templates are written against (renderVersion, else the
// storage version), which is the version the controller reads instances
// in. versions is kept as written.
func Defaulted(api v1alpha1.BundleAPI) v1alpha1.BundleAPI {
	out := *api.DeepCopy()
	out.Version = RenderVersion(api)
	if out.Plural == "" {
		out.Plural = Plural(out.Kind)
	}
	if out.DeletionPolicy == "" {
		out.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	}
	return out
}

// served reports whether the version is served (true when unset).
func served(v v1alpha1.APIVersion) bool { return v.Served == nil || *v.Served }

// Plural is the English plural of the lower-cased kind, as the resource
// name of a kind is usually spelled: policy → policies, box → boxes,
// match → matches, appservice → appservices, day → days. It is the one
// plural of a published kind: the CRD publish builds names it, and every
// other place reads it from there (Defaulted, GVR). It is not
// k8s.io/apimachinery's UnsafeGuessKindToResource, a guess for kinds no
// server describes, which would name the CRDs of Gateway and Box
// gatewaies and boxs.
func Plural(kind string) string {
	s := strings.ToLower(kind)
	switch {
	case s == "":
		return ""
	case strings.HasSuffix(s, "y") && len(s) > 1 && !strings.ContainsRune("aeiou", rune(s[len(s)-2])):
		return s[:len(s)-1] + "ies"
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "z"),
		strings.HasSuffix(s, "ch"), strings.HasSuffix(s, "sh"):
		return s + "es"
	default:
		return s + "s"
	}
}

// CRDName is the name of the CRD of the published kind: <plural>.<group>,
// with the plural defaulted.
func CRDName(api v1alpha1.BundleAPI) string {
	d := Defaulted(api)
	return d.Plural + "." + d.Group
}

// GVK is the group, version and kind of the published kind in its
// render version (see Defaulted): the version the controller reads and
// renders instances in.
func GVK(api v1alpha1.BundleAPI) schema.GroupVersionKind {
	d := Defaulted(api)
	return schema.GroupVersionKind{Group: d.Group, Version: d.Version, Kind: d.Kind}
}

// GVR is the group, version and resource (the plural) of the published
// kind, in its render version and with the plural defaulted.
func GVR(api v1alpha1.BundleAPI) schema.GroupVersionResource {
	d := Defaulted(api)
	return schema.GroupVersionResource{Group: d.Group, Version: d.Version, Resource: d.Plural}
}

// Serves reports whether api (nil: none) publishes gvk: its group and
// kind, in any of its versions (the version defaulted in the
// single-version form). It is what finds the Bundle of an instance, in
// whichever version the instance comes.
func Serves(api *v1alpha1.BundleAPI, gvk schema.GroupVersionKind) bool {
	if api == nil {
		return false
	}
	d := Defaulted(*api)
	if d.Group != gvk.Group || d.Kind != gvk.Kind {
		return false
	}
	for _, v := range Versions(*api) {
		if v.Name == gvk.Version {
			return true
		}
	}
	return false
}
