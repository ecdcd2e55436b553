package templates_test

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

func bundleOrNil(files map[string]string) *templates.Bundle {
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "fuzz"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		return nil
	}
	return b
}
