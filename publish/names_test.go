package publish_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

func TestPlural(t *testing.T) {
	tests := map[string]string{
		"AppService": "appservices", "Foo": "foos", "CronTab": "crontabs", "CloudManager": "cloudmanagers",
		// y after a consonant, after a vowel
		"Policy": "policies", "Gateway": "gateways", "Y": "ys",
		// sibilants
		"Box": "boxes", "Status": "statuses", "Waltz": "waltzes", "Match": "matches", "Mesh": "meshes",
	}
	for kind, want := range tests {
		if got := publish.Plural(kind); got != want {
			t.Errorf("Plural(%q) = %q, want %q", kind, got, want)
		}
	}
}

func TestDefaulted(t *testing.T) {
	in := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "Policy"}
	got := publish.Defaulted(in)
	want := v1alpha1.BundleAPI{Group: "app.example.com", Kind: "Policy", Version: "v1alpha1", Plural: "policies", DeletionPolicy: v1alpha1.DeletionPolicyOrphan}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Defaulted (-want +got):\n%s", diff)
	}
	if in.Version != "" || in.Plural != "" {
		t.Errorf("Defaulted changed its argument: %+v", in)
	}
	// What is written is kept.
	written := v1alpha1.BundleAPI{Group: "g.io", Kind: "Foo", Version: "v2", Plural: "fooz", DeletionPolicy: v1alpha1.DeletionPolicyDelete}
	if diff := cmp.Diff(written, publish.Defaulted(written)); diff != "" {
		t.Errorf("Defaulted overrode written fields (-want +got):\n%s", diff)
	}
	if got := publish.CRDName(in); got != "policies.app.example.com" {
		t.Errorf("CRDName = %q", got)
	}
	if got, want := publish.GVK(in), (schema.GroupVersionKind{Group: "app.example.com", Version: "v1alpha1", Kind: "Policy"}); got != want {
		t.Errorf("GVK = %v, want %v", got, want)
	}
	if got, want := publish.GVR(written), (schema.GroupVersionResource{Group: "g.io", Version: "v2", Resource: "fooz"}); got != want {
		t.Errorf("GVR = %v, want %v", got, want)
	}
}

func TestServes(t *testing.T) {
	api := &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService"}
	tests := []struct {
		api  *v1alpha1.BundleAPI
		gvk  schema.GroupVersionKind
		want bool
	}{
		{api, schema.GroupVersionKind{Group: "app.example.com", Version: "v1alpha1", Kind: "AppService"}, true},
		{api, schema.GroupVersionKind{Group: "app.example.com", Version: "v1", Kind: "AppService"}, false},
		{api, schema.GroupVersionKind{Group: "example.com", Version: "v1alpha1", Kind: "AppService"}, false},
		{api, schema.GroupVersionKind{Group: "app.example.com", Version: "v1alpha1", Kind: "Appservice"}, false},
		{nil, schema.GroupVersionKind{Group: "app.example.com", Version: "v1alpha1", Kind: "AppService"}, false},
	}
	for _, tt := range tests {
		if got := publish.Serves(tt.api, tt.gvk); got != tt.want {
			t.Errorf("Serves(%v, %v) = %t, want %t", tt.api, tt.gvk, got, tt.want)
		}
	}
}
