package engine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// NewScheme returns a scheme with the built-in types, CRDs and stencil's API.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NamespaceSelected reports whether Bundle b's spec.namespaceSelector
// selects namespace ns, whose labels c reads (the controller's cache).
// No selector selects every namespace. The admission webhook refuses with
// it what the controller would stall.
func NamespaceSelected(ctx context.Context, c client.Reader, b *v1alpha1.Bundle, ns string) (bool, error) {
	if b.Spec.NamespaceSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("bundle %s: spec.namespaceSelector: %w", b.Name, err)
	}
	n := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		return false, fmt.Errorf("read namespace %s: %w", ns, err)
	}
	return sel.Matches(labels.Set(n.Labels)), nil
}
