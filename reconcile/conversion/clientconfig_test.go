package conversion_test

import (
	"bytes"
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// The CRD's conversion follows the base entry of the webhook
// configuration: a new caBundle there (a CA rotated: here the same CA
// twice, which still verifies the server) is the CRD's soon after, and
// conversions keep working.
func TestConversionFollowsTheCA(t *testing.T) {
	ns, group := publishAppService(t)
	ctx := context.Background()
	key := suite.Key("", "stencil-conversion-test")
	rotated := []byte(nil)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	cfg.Name = key.Name
	err := env.Retry(ctx, cfg, func() error {
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == admission.CompositionsWebhookName {
				cc := &cfg.Webhooks[i].ClientConfig
				first, _, _ := bytes.Cut(cc.CABundle, []byte("-----END CERTIFICATE-----"))
				cert := append(append([]byte{}, first...), []byte("-----END CERTIFICATE-----\n")...)
				cc.CABundle = append(cert, cert...)
				rotated = cc.CABundle
			}
		}
		return env.Update(ctx, cfg)
	})
	if err != nil || rotated == nil {
		t.Fatalf("rotate the base entry's caBundle: %v", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	testenv.Eventually(t, 0, "the CRD's conversion to have the new caBundle", func() (bool, error) {
		if err := env.Get(ctx, client.ObjectKey{Name: "appservices." + group}, crd); err != nil {
			return false, err
		}
		c := crd.Spec.Conversion
		return c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && bytes.Equal(c.Webhook.ClientConfig.CABundle, rotated), nil
	})
	testenv.Eventually(t, 0, "a write through v1 after the rotation", func() (bool, error) {
		err := env.Create(ctx, appService(t, group, "v1", ns, "after", "size: 1"))
		// The API server may hold the old CA for a moment: try again.
		return err == nil, nil
	})
}
