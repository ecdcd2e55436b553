package conversion

import (
	"errors"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// FromBundle is the controller's Builder: the Bundle's conversion rules
// compiled by publish.Converter.
//
// TODO(i39): publish.Converter once the conversion engine is on main.
func FromBundle(string, v1alpha1.BundleSpec) (Converter, error) {
	return nil, errors.New("stencil's conversion engine is not built in")
}
