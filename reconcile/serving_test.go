package reconcile_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// servingTestLabel selects the ConfigMaps the test's webhook entry
// intercepts, so it touches no other test's objects.
const servingTestLabel = "stencil.dev/serving-test"

// TestServingRotatesAndInjects runs the webhook serving as `make run` does
// (--webhook-host=localhost, rotated certificates) under the controller's
// own RBAC (config/rbac): the controller creates the certificate Secret,
// cert-controller fills it, the controller writes it to the cert folder
// and points the configuration's entry at https://localhost:PORT with the
// CA injected, so the real API server calls the webhook over verified TLS
// and its answer refuses a request. An entry added later, as the Bundle
// controller adds published.stencil.dev, gets the URL and the CA too.
func TestServingRotatesAndInjects(t *testing.T) {
	ctx, cancel := context.WithCancel(suiteCtx)
	defer cancel()
	ns := "stencil-system" // the controller's namespace, where its Role grants Secrets
	opts := admission.ServingOptions{
		Port: testenv.FreePort(t), Host: "localhost", CertDir: t.TempDir(), Certs: admission.CertsRotate,
		SecretName: "stencil-webhook-cert-serving-test", Service: admission.DefaultWebhookService,
		Namespace: ns, ConfigName: "stencil-serving-test",
	}
	cfg := webhookConfig(opts.ConfigName, "compositions.stencil.dev")
	if err := k.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), cfg) })

	serving, err := admission.NewServing(opts)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := reconcile.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(controllerCfg, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: serving.WebhookServer(),
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register(admission.WebhookPath, &webhook.Admission{Handler: cradmission.HandlerFunc(
		func(context.Context, cradmission.Request) cradmission.Response {
			return cradmission.Denied("refused by the serving test's webhook")
		})})
	if err := serving.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	eventually(t, "Ready to be closed", func() (bool, error) {
		select {
		case <-serving.Ready():
			return true, nil
		default:
			return false, nil
		}
	})
	secret := &corev1.Secret{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.SecretName}, secret); err != nil {
		t.Fatal(err)
	}
	caPEM := secret.Data["ca.crt"]
	for _, f := range []string{"tls.crt", "tls.key"} {
		got, err := os.ReadFile(filepath.Join(opts.CertDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, secret.Data[f]) {
			t.Errorf("%s in the cert folder differs from the Secret's", f)
		}
	}
	// The certificate is for localhost, signed by the Secret's CA.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the Secret's ca.crt holds no certificate")
	}
	eventually(t, "the webhook server to serve the certificate", func() (bool, error) {
		conn, err := tls.Dial("tcp", net.JoinHostPort("localhost", strconv.Itoa(opts.Port)), &tls.Config{RootCAs: roots, ServerName: "localhost"})
		if err != nil {
			return false, err
		}
		return true, conn.Close()
	})

	t.Run("the entries point at the controller with the CA", func(t *testing.T) {
		pointed(t, opts, caPEM, "compositions.stencil.dev")
	})

	t.Run("the API server calls the webhook", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "intercepted", Namespace: ns, Labels: map[string]string{servingTestLabel: "true"}}}
		err := k.Create(ctx, cm)
		if err == nil || !strings.Contains(err.Error(), "refused by the serving test's webhook") {
			t.Fatalf("create an intercepted ConfigMap: got %v, want the webhook's refusal", err)
		}
	})

	t.Run("an entry added later gets the URL and the CA", func(t *testing.T) {
		// The controller writes the configuration too (the URL, the CA).
		live := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: opts.ConfigName}}
		if err := updateFresh(ctx, live, func() error {
			live.Webhooks = append(live.Webhooks, webhookConfig(opts.ConfigName, "published.stencil.dev").Webhooks[0])
			return k.Update(ctx, live)
		}); err != nil {
			t.Fatal(err)
		}
		pointed(t, opts, caPEM, "compositions.stencil.dev", "published.stencil.dev")
	})
}

// pointed waits until the configuration of opts has exactly the entries
// named, each calling opts.URL() with caPEM as its CA bundle.
func pointed(t *testing.T, opts admission.ServingOptions, caPEM []byte, names ...string) {
	t.Helper()
	eventually(t, "the entries to point at "+opts.URL(), func() (bool, error) {
		live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k.Get(context.Background(), client.ObjectKey{Name: opts.ConfigName}, live); err != nil {
			return false, err
		}
		if len(live.Webhooks) != len(names) {
			return false, nil
		}
		for i, w := range live.Webhooks {
			cc := w.ClientConfig
			if w.Name != names[i] || cc.Service != nil || cc.URL == nil || *cc.URL != opts.URL() || !bytes.Equal(cc.CABundle, caPEM) {
				return false, nil
			}
		}
		return true, nil
	})
}

// webhookConfig is a configuration with one entry, as config/webhook has
// it: through the Service, no CA yet, Fail on the ConfigMaps labelled
// servingTestLabel only.
func webhookConfig(name, entry string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: entry,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "stencil-system", Name: admission.DefaultWebhookService, Path: ptr.To(admission.WebhookPath),
			}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{servingTestLabel: "true"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}
