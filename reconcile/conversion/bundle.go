package conversion

import (
	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// FromBundle is the controller's Builder: the Bundle's versions and
// conversion rules compiled by publish.Converter.
func FromBundle(bundleName string, spec v1alpha1.BundleSpec) (Converter, error) {
	c, err := publish.Converter(bundleName, spec)
	if err != nil {
		return nil, err
	}
	return c, nil
}
