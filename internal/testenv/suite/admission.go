package suite

import (
	"context"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// The Suite's admission webhook: a copy of config/webhook, limited to
// the namespaces a test labels, served by a controller the test starts.

// AdmissionLabel marks the namespaces whose requests the admission tests'
// webhook configurations send to the webhook (AdmissionNamespace): the
// other tests never go through admission.
const AdmissionLabel = "stencil.dev/admission-test"

// AdmissionNamespace creates a namespace labelled AdmissionLabel for one
// test, deleted when it ends.
func (s *Suite) AdmissionNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "adm-" + rand.String(8), Labels: map[string]string{AdmissionLabel: "true"}}}
	s.MustCreate(t, ns)
	t.Cleanup(func() { _ = s.Delete(context.Background(), ns) })
	return ns.Name
}

// InstallAdmission installs a copy of config/webhook named name whose
// entries select the namespaces labelled selector (InstallWebhooks), and
// removes it when the test ends; start a controller serving it with the
// returned options (ControllerOptions.Webhooks, and Admission's
// ConfigName and MutatingConfigName name and name-mutating), or call
// StartAdmission.
func (s *Suite) InstallAdmission(t testing.TB, name string, selector map[string]string) *envtest.WebhookInstallOptions {
	t.Helper()
	hooks, err := testenv.InstallWebhooks(s.Config, name, &metav1.LabelSelector{MatchLabels: selector})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Delete(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = s.Delete(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-mutating"}})
		_ = hooks.Cleanup()
	})
	return hooks
}

// StartAdmission installs a copy of config/webhook named name whose
// entries select the namespaces labelled selector (InstallAdmission), and
// starts a controller of shard, writing as itself, that serves the
// webhook with admission's options (a shard no Composition of the test is
// in: the package's controller reconciles them). Both go when the test
// ends, the controller first. It returns the webhook server's options
// (its host, port and CA) and the controller.
func (s *Suite) StartAdmission(t testing.TB, name, shard string, selector map[string]string, opts admission.Options) (*envtest.WebhookInstallOptions, *testenv.Controller) {
	t.Helper()
	hooks := s.InstallAdmission(t, name, selector)
	opts.ConfigName, opts.MutatingConfigName = name, name+"-mutating"
	c, _ := s.StartWith(t, testenv.ControllerOptions{Shard: shard, Webhooks: hooks, Admission: opts, WriteAsController: true})
	return hooks, c
}

// Refusing waits until the webhook refuses a Composition of bundle in ns
// with invalid values (a dry run of ShopFiles' replicas 9): until its
// server serves, and its cache holds the Bundle, the API server lets
// every request through (failurePolicy Ignore).
func (s *Suite) Refusing(t testing.TB, ns, bundle string) {
	t.Helper()
	testenv.Eventually(t, 0, "the webhook to refuse invalid values", func() (bool, error) {
		err := s.Create(context.Background(), Composition(ns, "probe", bundle, `{"replicas":9}`), client.DryRunAll)
		return apierrors.IsInvalid(err), err
	})
}

// Denied checks that err is the webhook's refusal, as an Invalid error,
// and returns its message.
func Denied(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("the request was admitted; want it refused")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `admission webhook "`) {
		t.Fatalf("got %v; want the webhook's refusal, reason Invalid", err)
	}
	t.Logf("refused: %v", err)
	return err.Error()
}

// ShopFiles render a Deployment and a Secret unless values.off and,
// while values.extra is true, a ConfigMap; values.mode "bad" fails at
// templates/cm.yaml line 6, values.slow takes seconds. WithShopSchema
// bounds replicas to 1..5.
func ShopFiles() map[string]string {
	return map[string]string{
		"values.yaml": "replicas: 2\npassword: first-secret\nextra: true\nmode: good\nslow: false\n",
		"templates/deploy.yaml": `{{- if not .Values.off }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
{{- end }}
`,
		"templates/secret.yaml": `{{- if not .Values.off }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Composition.Name }}
stringData:
  password: {{ .Values.password | quote }}
{{- end }}
`,
		"templates/cm.yaml": `{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-extra
data: {mode: {{ .Values.mode | quote }}}{{ if eq .Values.mode "bad" }}{{ fail "mode bad is not supported" }}{{ end }}
{{- end }}
`,
		// scrypt, 0.1 to 0.3 s a call, 15 times.
		"templates/slow.yaml": `{{ if .Values.slow }}{{ range until 15 }}{{ $p := derivePassword 1 "long" "password" "user" "example.com" }}{{ end }}{{ end }}`,
	}
}

// shopSchema is the values schema of ShopFiles.
const shopSchema = `{"type":"object","properties":{
  "replicas":{"type":"integer","minimum":1,"maximum":5},
  "password":{"type":"string"},
  "extra":{"type":"boolean"},
  "slow":{"type":"boolean"},
  "off":{"type":"boolean"},
  "mode":{"type":"string","enum":["good","bad"]}}}`

// WithShopSchema gives a Bundle of ShopFiles its values schema.
func WithShopSchema(s *v1alpha1.BundleSpec) {
	s.Schema = &apiextensionsv1.JSON{Raw: []byte(shopSchema)}
}
