package published

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	neturl "net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/cluster"
)

// Conversion says where the API server reaches the conversion webhook of
// the published kinds with several versions: the controller's webhook
// server, as its admission webhooks (package admission serves it at
// publish.ConversionWebhookPath). The CRD of such a kind is sent where
// the ValidatingWebhookConfiguration ConfigName sends its entry
// BaseEntry (config/webhook's compositions.stencil.dev), with that
// entry's caBundle.
type Conversion struct {
	// Enabled: the controller serves its webhooks (admission is enabled).
	Enabled bool
	// ConfigName is the ValidatingWebhookConfiguration, BaseEntry its
	// entry whose clientConfig the conversion webhook shares.
	ConfigName, BaseEntry string
}

// conversionClient is the clientConfig of the conversion webhook: the
// base entry's, with the path publish.ConversionWebhookPath (the CRD's
// token is added by withToken), whether it names a Service or a URL, and
// its caBundle. When there is none, why
// says so (the configuration's change brings the next pass).
func (r *BundleReconciler) conversionClient(ctx context.Context) (cc *apiextensionsv1.WebhookClientConfig, why string, err error) {
	c := r.conversion
	if !c.Enabled {
		return nil, "the controller serves no conversion webhook: its webhook server is off (--webhook-port 0)", nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: c.ConfigName}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("the conversion webhook is sent where ValidatingWebhookConfiguration %s sends %s, and there is no such configuration", c.ConfigName, c.BaseEntry), nil
		}
		return nil, "", fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", c.ConfigName, err)
	}
	for _, w := range cfg.Webhooks {
		if w.Name != c.BaseEntry {
			continue
		}
		if len(w.ClientConfig.CABundle) == 0 {
			return nil, fmt.Sprintf("the entry %s of ValidatingWebhookConfiguration %s has no caBundle yet", c.BaseEntry, c.ConfigName), nil
		}
		return convertClientConfig(w.ClientConfig)
	}
	return nil, fmt.Sprintf("the conversion webhook is sent where ValidatingWebhookConfiguration %s sends its entry %s, and it has none", c.ConfigName, c.BaseEntry), nil
}

// convertClientConfig is base sent to publish.ConversionWebhookPath.
func convertClientConfig(base admissionregistrationv1.WebhookClientConfig) (*apiextensionsv1.WebhookClientConfig, string, error) {
	cc := &apiextensionsv1.WebhookClientConfig{CABundle: append([]byte(nil), base.CABundle...)}
	switch {
	case base.Service != nil:
		cc.Service = &apiextensionsv1.ServiceReference{Namespace: base.Service.Namespace, Name: base.Service.Name,
			Path: ptr.To(publish.ConversionWebhookPath)}
		if base.Service.Port != nil {
			cc.Service.Port = ptr.To(*base.Service.Port)
		}
	case base.URL != nil:
		u, err := neturl.Parse(*base.URL)
		if err != nil {
			return nil, "", fmt.Errorf("the base entry's url: %w", err)
		}
		u.Path, u.RawPath, u.RawQuery, u.Fragment = publish.ConversionWebhookPath, "", "", ""
		cc.URL = ptr.To(u.String())
	default:
		return nil, "the base entry names neither a Service nor a URL", nil
	}
	return cc, "", nil
}

// withToken puts a token into the path of crd's conversion webhook
// (publish.ConversionPath), if it has one: live's token, when live (the
// CRD as it is, nil when there is none) has one, so that a pass writes
// the token it found and no CRD changes for it; else a new one
// (newConversionToken). The token is what lets a caller of the webhook
// have its conversions (package conversion).
func withToken(crd, live *apiextensionsv1.CustomResourceDefinition) error {
	c := crd.Spec.Conversion
	if c == nil || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return nil
	}
	token, ok := "", false
	if live != nil {
		token, ok = publish.ConversionToken(live)
	}
	if !ok {
		var err error
		if token, err = newConversionToken(); err != nil {
			return fmt.Errorf("make the conversion token of CustomResourceDefinition %s: %w", crd.Name, err)
		}
	}
	path := publish.ConversionPath(token)
	switch cc := c.Webhook.ClientConfig; {
	case cc.Service != nil:
		cc.Service.Path = ptr.To(path)
	case cc.URL != nil:
		u, err := neturl.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("the conversion webhook's url: %w", err)
		}
		u.Path, u.RawPath = path, ""
		cc.URL = ptr.To(u.String())
	}
	return nil
}

// newConversionToken is publish.ConversionTokenBytes from crypto/rand,
// in hex.
func newConversionToken() (string, error) {
	b := make([]byte, publish.ConversionTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// withConversion points the conversion of crd (a kind of several
// versions) at the conversion webhook. A publication with a reason
// (ConversionUnavailable) says why it cannot be; crd is then not to be
// written.
func (r *BundleReconciler) withConversion(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, what string) (publication, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil {
		return publication{}, nil
	}
	cc, why, err := r.conversionClient(ctx)
	if err != nil || why != "" {
		return publication{reason: v1alpha1.ReasonConversionUnavailable,
			message: fmt.Sprintf("%s is not published: it has %d versions, which convert through stencil's conversion webhook, and %s", what, len(crd.Spec.Versions), why)}, err
	}
	conv.Webhook.ClientConfig = cc
	return publication{}, nil
}

// conversionConfigSource is a source of the Bundles with several
// versions when the webhook configuration c.ConfigName changes (its
// base entry moved, its CA rotated): a metadata watch of it by name.
func conversionConfigSource(md metadata.Interface, c Conversion, bundles client.Reader) source.Source {
	return cluster.MetadataSource(md, admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
		"ValidatingWebhookConfiguration "+c.ConfigName+" (the conversion webhook's clientConfig)",
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.ConfigName).String()
		},
		func(q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], _ metav1.Object) {
			ctx := context.Background()
			list := &v1alpha1.BundleList{}
			if err := bundles.List(ctx, list); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "list Bundles after the webhook configuration changed")
				return
			}
			for _, b := range list.Items {
				if b.Spec.API != nil && len(b.Spec.API.Versions) > 1 {
					q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: b.Name}})
				}
			}
		})
}
