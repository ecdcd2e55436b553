package publish_test

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

func TestValidate(t *testing.T) {
	ok := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService"}
	with := func(f func(*v1alpha1.BundleAPI)) v1alpha1.BundleAPI {
		a := *ok.DeepCopy()
		f(&a)
		return a
	}
	tests := []struct {
		name string
		api  v1alpha1.BundleAPI
		want []string // field paths, in order
	}{
		{"minimal", ok, nil},
		{"everything", with(func(a *v1alpha1.BundleAPI) {
			a.Version, a.Plural, a.ShortNames, a.Categories = "v2beta1", "appsvcs", []string{"as"}, []string{"all", "apps"}
			a.PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Image", Type: "string", JSONPath: ".spec.image"}}
			a.DeletionPolicy, a.Defaults = v1alpha1.DeletionPolicyDelete, v1alpha1.InstanceDefaults{ServiceAccountName: "deployer", DeletionPolicy: v1alpha1.DeletionPolicyOrphan}
		}), nil},
		// group
		{"no group", with(func(a *v1alpha1.BundleAPI) { a.Group = "" }), []string{"spec.api.group"}},
		{"group without a dot", with(func(a *v1alpha1.BundleAPI) { a.Group = "example" }), []string{"spec.api.group"}},
		{"group not a DNS subdomain", with(func(a *v1alpha1.BundleAPI) { a.Group = "Example.com" }), []string{"spec.api.group"}},
		{"stencil's group", with(func(a *v1alpha1.BundleAPI) { a.Group = "stencil.dev" }), []string{"spec.api.group"}},
		{"a subdomain of stencil's group", with(func(a *v1alpha1.BundleAPI) { a.Group = "apps.stencil.dev" }), []string{"spec.api.group"}},
		{"a group that merely ends like it", with(func(a *v1alpha1.BundleAPI) { a.Group = "mystencil.dev" }), nil},
		// Kubernetes' own groups are valid: the controller serves a kind
		// there only once a cluster admin approved its CRD.
		{"Kubernetes' group", with(func(a *v1alpha1.BundleAPI) { a.Group = "k8s.io" }), nil},
		{"a subdomain of k8s.io", with(func(a *v1alpha1.BundleAPI) { a.Group = "samplecontroller.k8s.io" }), nil},
		{"a subdomain of kubernetes.io", with(func(a *v1alpha1.BundleAPI) { a.Group = "x.kubernetes.io" }), nil},
		// kind and version
		{"no kind", with(func(a *v1alpha1.BundleAPI) { a.Kind = "" }), []string{"spec.api.kind"}},
		{"lower-case kind", with(func(a *v1alpha1.BundleAPI) { a.Kind = "appService" }), []string{"spec.api.kind"}},
		{"kind with a dash", with(func(a *v1alpha1.BundleAPI) { a.Kind = "App-Service" }), []string{"spec.api.kind"}},
		{"bad version", with(func(a *v1alpha1.BundleAPI) { a.Version = "1.0" }), []string{"spec.api.version"}},
		{"version v0", with(func(a *v1alpha1.BundleAPI) { a.Version = "v0" }), []string{"spec.api.version"}},
		// names
		{"plural with upper case", with(func(a *v1alpha1.BundleAPI) { a.Plural = "AppServices" }), []string{"spec.api.plural"}},
		{"short name with a dot", with(func(a *v1alpha1.BundleAPI) { a.ShortNames = []string{"ok", "a.s"} }), []string{"spec.api.shortNames[1]"}},
		{"duplicate category", with(func(a *v1alpha1.BundleAPI) { a.Categories = []string{"all", "all"} }), []string{"spec.api.categories[1]"}},
		// columns
		{"column without a name, type or path", with(func(a *v1alpha1.BundleAPI) {
			a.PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{}}
		}), []string{"spec.api.printerColumns[0].name", "spec.api.printerColumns[0].type", "spec.api.printerColumns[0].jsonPath"}},
		{"two columns of one name", with(func(a *v1alpha1.BundleAPI) {
			a.PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Image", Type: "string", JSONPath: ".spec.a"}, {Name: "Image", Type: "string", JSONPath: ".spec.b"}}
		}), []string{"spec.api.printerColumns[1].name"}},
		{"column shadowing Ready", with(func(a *v1alpha1.BundleAPI) {
			a.PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Ready", Type: "string", JSONPath: ".spec.x"}}
		}), []string{"spec.api.printerColumns[0].name"}},
		// policies and defaults
		{"bad deletion policy", with(func(a *v1alpha1.BundleAPI) { a.DeletionPolicy = "Keep" }), []string{"spec.api.deletionPolicy"}},
		{"bad default deletion policy", with(func(a *v1alpha1.BundleAPI) { a.Defaults.DeletionPolicy = "delete" }), []string{"spec.api.defaults.deletionPolicy"}},
		{"bad service account", with(func(a *v1alpha1.BundleAPI) { a.Defaults.ServiceAccountName = "Deployer" }), []string{"spec.api.defaults.serviceAccountName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range publish.Validate(tt.api) {
				if !slices.Contains(got, e.Field) {
					got = append(got, e.Field)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("paths = %q, want %q (%v)", got, tt.want, publish.Validate(tt.api))
			}
		})
	}
}
