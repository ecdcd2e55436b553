package admission_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/admission/serving"
	"github.com/stencil-dev/stencil/reconcile/engine"
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
	ctx, cancel := context.WithCancel(env.Context())
	defer cancel()
	ns := "stencil-system" // the controller's namespace, where its Role grants Secrets
	opts := serving.ServingOptions{
		Port: testenv.FreePort(t), Host: "localhost", CertDir: t.TempDir(), Certs: serving.CertsRotate,
		SecretName: "stencil-webhook-cert-serving-test", Service: serving.DefaultWebhookService,
		Namespace: ns, ConfigName: "stencil-serving-test",
	}
	cfg := webhookConfig(opts.ConfigName, "compositions.stencil.dev")
	if err := env.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Delete(context.Background(), cfg) })

	webhookServing, err := serving.NewServing(opts)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := engine.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.ControllerConfig, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhookServing.WebhookServer(),
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr.GetWebhookServer().Register(admission.WebhookPath, &webhook.Admission{Handler: cradmission.HandlerFunc(
		func(context.Context, cradmission.Request) cradmission.Response {
			return cradmission.Denied("refused by the serving test's webhook")
		})})
	if err := webhookServing.SetupWithManager(ctx, mgr); err != nil {
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

	testenv.Eventually(t, 0, "Ready to be closed", func() (bool, error) {
		select {
		case <-webhookServing.Ready():
			return true, nil
		default:
			return false, nil
		}
	})
	secret := &corev1.Secret{}
	if err := env.Get(ctx, client.ObjectKey{Namespace: ns, Name: opts.SecretName}, secret); err != nil {
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
	var alpn string
	testenv.Eventually(t, 0, "the webhook server to serve the certificate", func() (bool, error) {
		conn, err := tls.Dial("tcp", net.JoinHostPort("localhost", strconv.Itoa(opts.Port)), &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			return false, err
		}
		alpn = conn.ConnectionState().NegotiatedProtocol
		return true, conn.Close()
	})
	// HTTP/2 off unless --enable-http2 (CVE-2023-44487).
	if alpn != "http/1.1" {
		t.Errorf("the webhook server negotiated ALPN %q for a client offering h2 and http/1.1; want http/1.1", alpn)
	}

	t.Run("the entries point at the controller with the CA", func(t *testing.T) {
		pointed(t, opts, caPEM, "compositions.stencil.dev")
	})

	t.Run("the API server calls the webhook", func(t *testing.T) {
		// The API server reads webhook configurations from an informer:
		// until it has the entry pointed at the controller, it calls the
		// Service the entry named first, which does not exist, and the
		// entry (Fail) refuses with that error instead.
		testenv.Eventually(t, 0, "the API server to call the webhook", func() (bool, error) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "intercepted", Namespace: ns, Labels: map[string]string{servingTestLabel: "true"}}}
			err := env.Create(ctx, cm)
			if err == nil {
				_ = env.Delete(ctx, cm)
				t.Fatal("an intercepted ConfigMap was created; want the webhook's refusal")
			}
			return strings.Contains(err.Error(), "refused by the serving test's webhook"), err
		})
	})

	t.Run("an entry added later gets the URL and the CA", func(t *testing.T) {
		// The controller writes the configuration too (the URL, the CA).
		live := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: opts.ConfigName}}
		if err := env.Retry(ctx, live, func() error {
			live.Webhooks = append(live.Webhooks, webhookConfig(opts.ConfigName, "published.stencil.dev").Webhooks[0])
			return env.Update(ctx, live)
		}); err != nil {
			t.Fatal(err)
		}
		pointed(t, opts, caPEM, "compositions.stencil.dev", "published.stencil.dev")
	})
}

// pointed waits until the configuration of opts has exactly the entries
// named, each calling opts.URL() with caPEM as its CA bundle.
func pointed(t *testing.T, opts serving.ServingOptions, caPEM []byte, names ...string) {
	t.Helper()
	testenv.Eventually(t, 0, "the entries to point at "+opts.URL(), func() (bool, error) {
		live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Get(context.Background(), client.ObjectKey{Name: opts.ConfigName}, live); err != nil {
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
				Namespace: "stencil-system", Name: serving.DefaultWebhookService, Path: ptr.To(admission.WebhookPath),
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

// TestWebhookTrustsOnlyTheAPIServer attacks the webhook as a pod of the
// cluster would: a forged dry-run AdmissionReview, naming another tenant's
// Composition and posted straight to the webhook server without a client
// certificate (or with one no trusted CA signed), gets no value, path or
// member name read from the cluster, only the review of its own object;
// the same review from the API server's client certificate gets the
// preview. Through the API server, a tenant that may update Compositions
// but not get Secrets sees that the Secret exists and nothing more, the
// same whether a guessed value is right or wrong.
func TestWebhookTrustsOnlyTheAPIServer(t *testing.T) {
	const name = "stencil-authn-test"
	selector := map[string]string{suite.AdmissionLabel: "authn"}
	// As the controller: this test is about who may call the webhook and
	// what it may see; whose identity writes is TestWritesAreTheTenants's.
	hooks, c := env.StartAdmission(t, name, "authn", selector, admission.Options{})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "authn-" + rand.String(8), Labels: selector}}
	env.MustCreate(t, ns)
	t.Cleanup(func() { _ = env.Delete(context.Background(), ns) })
	b := env.Bundle(t, "authn-shop-"+ns.Name, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns.Name, b.Name)
	shop := suite.Composition(ns.Name, "shop", b.Name, `{"replicas":2,"password":"first-secret"}`)
	env.MustCreate(t, shop)
	env.Exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"}})
	env.Exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"}})
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop-extra"}})
	// The preview finds the ConfigMap to prune by the kinds the status
	// records: once the first pass wrote it.
	recorded(t, ns.Name, "shop", "ConfigMap", "Deployment.apps", "Secret")

	f := forger{hooks: hooks, shop: shop}

	t.Run("a forged review without a client certificate gets nothing done", func(t *testing.T) {
		var got []string
		costless(t, c, ns.Name, func() {
			var err error
			if got, err = f.post(t, nil); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("warnings: %q", got)
		leaks(t, got)
		if len(got) != 1 || !strings.Contains(got[0], "not reviewed") {
			t.Errorf("warnings %q: want one saying it is not reviewed", got)
		}
	})

	t.Run("a client certificate no trusted CA signed gets nothing", func(t *testing.T) {
		cert := selfSignedClient(t)
		var got []string
		var err error
		costless(t, c, ns.Name, func() { got, err = f.post(t, &cert) })
		if err == nil {
			leaks(t, got)
			if len(got) != 1 || !strings.Contains(got[0], "not reviewed") {
				t.Errorf("warnings %q: want it not reviewed", got)
			}
		} else {
			t.Logf("refused: %v", err)
		}
	})

	t.Run("the API server's client certificate gets the preview", func(t *testing.T) {
		cert, err := tls.LoadX509KeyPair(env.WebhookClient.CertFile, env.WebhookClient.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.post(t, &cert)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"stencil: Deployment/shop: spec.replicas 2 → 3", "stencil: ConfigMap/shop-extra: would be pruned"} {
			if !slices.Contains(got, want) {
				t.Errorf("warnings %q lack %q", got, want)
			}
		}
	})

	t.Run("a tenant that may not get Secrets learns nothing of them", func(t *testing.T) {
		const tenant = "tenant-without-secrets"
		env.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: tenant}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"stencil.dev"}, Resources: []string{"compositions"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}},
		}})
		env.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: tenant},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: tenant},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: tenant}}})
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: tenant}
		w := &suite.Warnings{}
		cfg.WarningHandler = w
		tc, err := client.New(cfg, client.Options{Scheme: env.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		dryRun := func(password string) []string {
			t.Helper()
			comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "shop"}}
			var got []string
			testenv.Eventually(t, 0, "a dry run as the tenant", func() (bool, error) {
				if err := tc.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
					return false, err
				}
				w.Take()
				comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3,"password":"` + password + `"}`)}
				err := tc.Update(ctx, comp, client.DryRunAll)
				got = w.Take()
				return err == nil, err
			})
			return got
		}
		right, wrong := dryRun("first-secret"), dryRun("a-wrong-guess")
		t.Logf("right guess: %q; wrong guess: %q", right, wrong)
		if !slices.Equal(right, wrong) {
			t.Errorf("the warnings differ between a right and a wrong guess of the Secret:\n%q\n%q", right, wrong)
		}
		if !slices.Contains(right, "stencil: Deployment/shop: spec.replicas 2 → 3") {
			t.Errorf("warnings %q: want the Deployment's change, which the tenant may get", right)
		}
		for _, l := range right {
			if strings.HasPrefix(l, "stencil: Secret/shop") && !strings.Contains(l, "exists") || strings.Contains(l, "data.password") {
				t.Errorf("warning %q tells more of the Secret than that it exists", l)
			}
		}
	})
}

// forger posts a forged review of a Composition straight to the webhook
// server: a dry-run update of another tenant's shop, as the API server
// would send it for a cluster admin.
type forger struct {
	hooks *envtest.WebhookInstallOptions
	shop  *v1alpha1.Composition
}

// review is the forged AdmissionReview of the shop as it is now.
func (f forger) review(t *testing.T) []byte {
	t.Helper()
	live := &v1alpha1.Composition{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(f.shop), live); err != nil {
		t.Fatal(err)
	}
	live.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	edited := live.DeepCopy()
	edited.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":3,"password":"guess","extra":false}`)}
	oldRaw, _ := json.Marshal(live)
	newRaw, _ := json.Marshal(edited)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:      types.UID("forged-" + rand.String(6)),
			Kind:     metav1.GroupVersionKind{Group: "stencil.dev", Version: "v1alpha1", Kind: "Composition"},
			Resource: metav1.GroupVersionResource{Group: "stencil.dev", Version: "v1alpha1", Resource: "compositions"},
			Name:     f.shop.Name, Namespace: f.shop.Namespace, Operation: admissionv1.Update,
			UserInfo: authenticationv1.UserInfo{Username: "stencil-admin", Groups: []string{"system:masters", "system:authenticated"}},
			Object:   runtime.RawExtension{Raw: newRaw}, OldObject: runtime.RawExtension{Raw: oldRaw},
			DryRun: ptr.To(true),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// post sends the forged review, presenting cert when not nil (always:
// not only when the server's acceptable CAs include its issuer), and
// returns the warnings of the answer, an error unless it allowed.
func (f forger) post(t *testing.T, cert *tls.Certificate) ([]string, error) {
	t.Helper()
	servingCA := x509.NewCertPool()
	servingCA.AppendCertsFromPEM(f.hooks.LocalServingCAData)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: servingCA, ServerName: f.hooks.LocalServingHost,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
	}}}
	defer hc.CloseIdleConnections()
	url := "https://" + net.JoinHostPort(f.hooks.LocalServingHost, strconv.Itoa(f.hooks.LocalServingPort)) + admission.WebhookPath
	res, err := hc.Post(url, "application/json", bytes.NewReader(f.review(t)))
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }() // a read-only body: nothing to act on
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(res.Body).Decode(review); err != nil {
		return nil, err
	}
	if review.Response == nil || !review.Response.Allowed {
		return nil, fmt.Errorf("response %+v", review.Response)
	}
	return review.Response.Warnings, nil
}

// leaks fails t for each warning that tells something of the shop read
// from the cluster: a member's name, a path, a value.
func leaks(t *testing.T, warnings []string) {
	t.Helper()
	for _, w := range warnings {
		for _, s := range []string{"Deployment/shop", "spec.replicas", "Secret/shop", "shop-extra", "first-secret"} {
			if strings.Contains(w, s) {
				t.Errorf("warning %q tells %s, read from the cluster", w, s)
			}
		}
	}
}

// costless checks that a forged review cost controller c nothing: no
// request to the API server (no access review, no list, no dry run) and
// no render of the shop in namespace ns.
func costless(t *testing.T, c *testenv.Controller, ns string, send func()) {
	t.Helper()
	requests, renders := len(c.Requests()), c.Renders(ns, "shop")
	send()
	if got := c.Requests()[requests:]; len(got) > 0 {
		for _, r := range got {
			// The controller's own work goes on (leases, its status
			// patches, its informers' watches, APIServices' among
			// them, started again when they time out): none of it
			// may be a review's.
			if strings.Contains(r, "watch=true") {
				continue
			}
			if strings.Contains(r, "subjectaccessreviews") || strings.Contains(r, "dryRun") || strings.Contains(r, "apiservices") {
				t.Errorf("the forged review cost the request %s", r)
			}
		}
	}
	if got := c.Renders(ns, "shop"); got != renders {
		t.Errorf("the forged review cost %d renders", got-renders)
	}
}

// selfSignedClient is a client certificate nobody the webhook trusts signed.
func selfSignedClient(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: testenv.WebhookClientName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
