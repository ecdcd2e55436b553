package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "stencil.dev", Version: "v1alpha1"}

// AddToScheme registers Bundle, BundleRevision and Composition (and their
// lists) in a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Bundle{}, &BundleList{},
		&BundleRevision{}, &BundleRevisionList{},
		&Composition{}, &CompositionList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
