package publish_test

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// The CRD of sample-controller's Foo, published by a Bundle named foo.
func ExampleCRD() {
	spec := v1alpha1.BundleSpec{
		Files:  map[string]string{"values.yaml": "replicas: 1\n", "templates/deployment.yaml": "..."},
		Schema: &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["deploymentName","replicas"],"properties":{"deploymentName":{"type":"string"},"replicas":{"type":"integer","minimum":0}}}`)},
		API:    &v1alpha1.BundleAPI{Group: "samplecontroller.example.com", Kind: "Foo"},
	}
	crd, err := publish.CRD("foo", spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	v := crd.Spec.Versions[0]
	fmt.Println(crd.Name, v.Name, crd.Spec.Scope)
	fmt.Println("spec requires", v.Schema.OpenAPIV3Schema.Properties["spec"].Required)
	fmt.Println(crd.Labels[publish.LabelBundle])

	spec.Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","properties":{"replicas":{"type":"integer","default":"one"}}}`)}
	_, err = publish.CRD("foo", spec)
	fmt.Println(err)
	// Output:
	// foos.samplecontroller.example.com v1alpha1 Namespaced
	// spec requires [deploymentName]
	// foo
	// the values schema cannot be the published kind's schema: spec.schema.properties[replicas].default: Invalid value: in body must be of type integer: "string"
}

// An instance's annotations override the Bundle's defaults.
func ExampleInstanceSpec() {
	api := &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", Defaults: v1alpha1.InstanceDefaults{Suspend: true}}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "app.example.com/v1alpha1", "kind": "AppService",
		"metadata": map[string]any{"name": "web", "namespace": "team-a", "annotations": map[string]any{publish.AnnotationSuspend: "false"}},
		"spec":     map[string]any{"size": int64(2), "image": "nginx"},
	}}
	spec, err := publish.InstanceSpec("appservice", api, obj)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spec.Bundle, string(spec.Values.Raw), spec.Suspend, *spec.Prune, spec.DeletionPolicy)
	// Output:
	// appservice {"image":"nginx","size":2} false true Delete
}
