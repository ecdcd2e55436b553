package v1alpha1_test

import (
	"testing"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

// TestReasonsOfErrors: the reasons packages templates and publish give
// their errors become condition reasons as they are: they must be the API's.
func TestReasonsOfErrors(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{templates.ReasonTimeout, v1alpha1.ReasonRenderTimeout},
		{templates.ReasonTooLarge, v1alpha1.ReasonRenderTooLarge},
		{publish.ReasonInvalidAPI, v1alpha1.ReasonInvalidAPI},
		{publish.ReasonNotStructural, v1alpha1.ReasonNotStructural},
	} {
		if tc.got != tc.want {
			t.Errorf("reason %q, want the API's %q", tc.got, tc.want)
		}
	}
}
