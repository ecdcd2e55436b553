package publish_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

func instance(spec map[string]any, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "app.example.com/v1", "kind": "AppService"}}
	u.SetNamespace("team-a")
	u.SetName("web")
	if spec != nil {
		u.Object["spec"] = spec
	}
	u.SetAnnotations(ann)
	return u
}

func TestInstanceSpec(t *testing.T) {
	yes, no := true, false
	api := &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService",
		Defaults: v1alpha1.InstanceDefaults{ServiceAccountName: "deployer", Prune: &no, DeletionPolicy: v1alpha1.DeletionPolicyOrphan}}
	tests := []struct {
		name string
		api  *v1alpha1.BundleAPI
		obj  *unstructured.Unstructured
		want v1alpha1.CompositionSpec
	}{
		{"no defaults, no spec: a defaulted Composition's knobs", nil, instance(nil, nil),
			v1alpha1.CompositionSpec{Bundle: "appservice", Prune: &yes, DeletionPolicy: v1alpha1.DeletionPolicyDelete}},
		{"spec is the values", nil, instance(map[string]any{"size": int64(3), "image": "nginx"}, nil),
			v1alpha1.CompositionSpec{Bundle: "appservice", Values: &apiextensionsv1.JSON{Raw: []byte(`{"image":"nginx","size":3}`)}, Prune: &yes, DeletionPolicy: v1alpha1.DeletionPolicyDelete}},
		{"the api's defaults", api, instance(nil, nil),
			v1alpha1.CompositionSpec{Bundle: "appservice", ServiceAccountName: "deployer", Prune: &no, DeletionPolicy: v1alpha1.DeletionPolicyOrphan}},
		{"annotations override the defaults", api, instance(nil, map[string]string{
			"stencil.dev/suspend": "true", "stencil.dev/prune": "true", "stencil.dev/deletion-policy": "Delete",
			"stencil.dev/service-account-name": "team-a-deployer", "unrelated": "x"}),
			v1alpha1.CompositionSpec{Bundle: "appservice", ServiceAccountName: "team-a-deployer", Suspend: true, Prune: &yes, DeletionPolicy: v1alpha1.DeletionPolicyDelete}},
		{"suspend false overrides a suspended default", &v1alpha1.BundleAPI{Defaults: v1alpha1.InstanceDefaults{Suspend: true}},
			instance(nil, map[string]string{"stencil.dev/suspend": "false"}),
			v1alpha1.CompositionSpec{Bundle: "appservice", Prune: &yes, DeletionPolicy: v1alpha1.DeletionPolicyDelete}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := publish.InstanceSpec("appservice", tt.api, tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("InstanceSpec (-want +got):\n%s", diff)
			}
		})
	}
	if *api.Defaults.Prune {
		t.Error("InstanceSpec changed the api's defaults")
	}
}

func TestInstanceSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want []string
	}{
		{"suspend yes", instance(nil, map[string]string{"stencil.dev/suspend": "yes-secret"}), []string{"stencil.dev/suspend", `"true" or "false"`}},
		{"prune 1", instance(nil, map[string]string{"stencil.dev/prune": "1"}), []string{"stencil.dev/prune", `"true" or "false"`}},
		{"deletion policy lower case", instance(nil, map[string]string{"stencil.dev/deletion-policy": "delete"}), []string{"stencil.dev/deletion-policy", "Delete or Orphan"}},
		{"service account not a name", instance(nil, map[string]string{"stencil.dev/service-account-name": "Not A Name"}), []string{"stencil.dev/service-account-name"}},
		{"spec not an object", func() *unstructured.Unstructured { u := instance(nil, nil); u.Object["spec"] = "x"; return u }(), []string{"spec must be an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prune := false
			api := &v1alpha1.BundleAPI{Defaults: v1alpha1.InstanceDefaults{Prune: &prune, DeletionPolicy: v1alpha1.DeletionPolicyOrphan}}
			spec, err := publish.InstanceSpec("appservice", api, tt.obj)
			if err == nil {
				t.Fatal("no error")
			}
			// The Bundle's defaults alone, for what needs no values.
			if spec.Bundle != "appservice" || spec.Prune == nil || *spec.Prune || spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan || spec.Suspend || spec.ServiceAccountName != "" {
				t.Errorf("spec with the error = %+v, want the Bundle's defaults alone", spec)
			}
			for _, w := range append(tt.want, "AppService team-a/web") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "yes-secret") {
				t.Errorf("err quotes the value: %v", err)
			}
		})
	}
}
