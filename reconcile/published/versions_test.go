package published_test

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// The package's controller serves no webhook: a kind of two versions,
// which convert through stencil's conversion webhook, is not published
// (ConversionUnavailable, saying why), and no CRD is made for it.
func TestVersionsWithoutConversionWebhook(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	group := "twover-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	b := env.Bundle(t, "twover-"+ns, suite.GadgetFiles(""), suite.Publishing(group, func(a *v1alpha1.BundleAPI) {
		a.Version = ""
		a.Versions = []v1alpha1.APIVersion{
			{Name: "v1", Conversion: &v1alpha1.VersionConversion{ToStorage: []v1alpha1.ConversionRule{{Move: &v1alpha1.FieldMove{From: "count", To: "size"}}}}},
			{Name: "v2", Storage: true},
		}
	}))
	ready := env.BundleReady(t, b.Name, metav1.ConditionFalse, v1alpha1.ReasonConversionUnavailable)
	for _, part := range []string{"2 versions", "conversion webhook", "webhook server is off"} {
		if !strings.Contains(ready.Message, part) {
			t.Errorf("Ready's message %q does not say %q", ready.Message, part)
		}
	}
	err := env.Get(context.Background(), suite.Key("", "gadgets."+group), &apiextensionsv1.CustomResourceDefinition{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the CRD of a kind not published: %v, want NotFound", err)
	}
}
