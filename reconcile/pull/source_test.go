package pull_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// greeter is a chart whose ConfigMap says greeting.
func greeter(t *testing.T, version, greeting string) []byte {
	return sourcetest.Chart(t, "greeter", version, map[string]string{
		"values.yaml":       "greeting: " + greeting + "\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  chart: {{ .Chart.Version | quote }}\n",
	})
}

// forSources is the metadata of a Secret of the controller's namespace
// that Bundle sources may name: the cluster admin's label.
func forSources(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: testenv.ControllerNamespace, Name: name,
		Labels: map[string]string{v1alpha1.LabelSecretType: v1alpha1.SecretTypeBundleSource}}
}

// sourceSecrets creates, in the controller's namespace, the credentials
// (for host) and CA Secrets of a registry, and returns the BundleSource
// fields naming them.
func sourceSecrets(t *testing.T, prefix, host, user, pass string, ca []byte) (auth, caRef *corev1.LocalObjectReference) {
	t.Helper()
	a := &corev1.Secret{ObjectMeta: forSources(prefix + "-auth"),
		StringData: map[string]string{source.KeyUsername: user, source.KeyPassword: pass, source.KeyHosts: host}}
	c := &corev1.Secret{ObjectMeta: forSources(prefix + "-ca"), Data: map[string][]byte{source.KeyCA: ca}}
	for _, s := range []*corev1.Secret{a, c} {
		env.MustCreate(t, s)
		t.Cleanup(func() { _ = env.Delete(context.Background(), s) })
	}
	return &corev1.LocalObjectReference{Name: a.Name}, &corev1.LocalObjectReference{Name: c.Name}
}

// sourceBundle creates a Bundle of src, deleted after the test.
func sourceBundle(t *testing.T, name string, src v1alpha1.BundleSource) *v1alpha1.Bundle {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleSpec{Source: &src}}
	env.MustCreate(t, b)
	t.Cleanup(func() { _ = env.Delete(context.Background(), b) })
	return b
}

// bundleSource waits until the Bundle's SourceReady condition is want
// (with reason, if given) for its generation and returns the Bundle.
func bundleSource(t *testing.T, name string, want metav1.ConditionStatus, reason string) *v1alpha1.Bundle {
	t.Helper()
	b := &v1alpha1.Bundle{}
	testenv.Eventually(t, 0, fmt.Sprintf("Bundle %s SourceReady=%s %s", name, want, reason), func() (bool, error) {
		if err := env.Get(context.Background(), client.ObjectKey{Name: name}, b); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionSourceReady)
		if c == nil || c.ObservedGeneration != b.Generation {
			return false, fmt.Errorf("no current SourceReady: %+v", b.Status.Conditions)
		}
		return c.Status == want && (reason == "" || c.Reason == reason), fmt.Errorf("SourceReady=%s %s: %s", c.Status, c.Reason, c.Message)
	})
	return b
}

// configMapSays waits until the ConfigMap ns/name has data.greeting want.
func configMapSays(t *testing.T, ns, name, want string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	testenv.Eventually(t, 0, fmt.Sprintf("ConfigMap %s greeting %q", name, want), func() (bool, error) {
		if err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return false, err
		}
		return cm.Data["greeting"] == want, fmt.Errorf("greeting %q", cm.Data["greeting"])
	})
}

// TestBundleSourceOCI: a Bundle naming an OCI chart behind basic auth and
// a private CA records the digest it pulled, and its Compositions render
// that chart; a new tag in the Bundle is a new digest and a new render.
func TestBundleSourceOCI(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	_, layer1 := reg.Push(t, "charts/greeter", "1.0.0", greeter(t, "1.0.0", "hello"))
	auth, ca := sourceSecrets(t, "oci-"+ns, reg.Host, "robot", "s3cret", reg.CA)
	b := sourceBundle(t, "oci-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), SecretRef: auth, CASecretRef: ca})

	got := bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
	if got.Status.Source == nil || got.Status.Source.Digest != layer1 || got.Status.Source.Version != "1.0.0" || !strings.HasPrefix(got.Status.Source.URL, "oci://"+reg.Host+"/charts/greeter@sha256:") {
		t.Fatalf("status.source = %+v; want digest %s, version 1.0.0, a URL pinned by digest", got.Status.Source, layer1)
	}
	env.BundleReady(t, b.Name, metav1.ConditionTrue, "")

	env.MustCreate(t, suite.Composition(ns, "web", b.Name, ""))
	env.Condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	configMapSays(t, ns, "web-cfg", "hello")

	// Another tag: another digest, another render.
	_, layer2 := reg.Push(t, "charts/greeter", "1.1.0", greeter(t, "1.1.0", "bonjour"))
	env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.OCI = reg.Ref("charts/greeter", "1.1.0") })
	configMapSays(t, ns, "web-cfg", "bonjour")
	if got := bundleSource(t, b.Name, metav1.ConditionTrue, ""); got.Status.Source.Digest != layer2 {
		t.Errorf("status.source.digest = %s; want %s", got.Status.Source.Digest, layer2)
	}

	// After a restart the cache is empty: the recorded digest is pulled
	// again, and nothing else.
	env.Restart(t, func() {})
	env.UpdateComposition(t, suite.Composition(ns, "web", b.Name, ""), func(c *v1alpha1.Composition) {
		c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hallo"}`)}
	})
	configMapSays(t, ns, "web-cfg", "hallo")
}

// TestBundleSourceFailure: a pull that fails is a condition of the
// Bundle with its reason; a parent of a Bundle never pulled waits and
// writes nothing; a re-resolve that fails keeps the chart pulled before,
// rendered, never emptied.
func TestBundleSourceFailure(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/greeter", "1.0.0", greeter(t, "1.0.0", "hello"))
	auth, ca := sourceSecrets(t, "fail-"+ns, reg.Host, "robot", "s3cret", reg.CA)
	_, badCA := sourceSecrets(t, "bad-"+ns, reg.Host, "robot", "wrong", reg.CA)
	wrong := &corev1.LocalObjectReference{Name: "bad-" + ns + "-auth"}

	t.Run("never pulled", func(t *testing.T) {
		b := sourceBundle(t, "unauth-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), SecretRef: wrong, CASecretRef: badCA})
		bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnauthorized)
		ready := env.BundleReady(t, b.Name, metav1.ConditionFalse, source.ReasonUnauthorized)
		if strings.Contains(ready.Message, "wrong") {
			t.Errorf("Ready quotes the password: %s", ready.Message)
		}
		env.MustCreate(t, suite.Composition(ns, "waits", b.Name, ""))
		c := env.Condition(t, ns, "waits", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSourceNotReady)
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceNotReady {
			t.Errorf("Ready = %+v; want reason %s", r, v1alpha1.ReasonSourceNotReady)
		}
	})

	t.Run("re-resolve fails", func(t *testing.T) {
		b := sourceBundle(t, "keep-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), SecretRef: auth, CASecretRef: ca})
		pulled := bundleSource(t, b.Name, metav1.ConditionTrue, "").Status.Source.Digest
		env.MustCreate(t, suite.Composition(ns, "keeps", b.Name, ""))
		env.Condition(t, ns, "keeps", v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapSays(t, ns, "keeps-cfg", "hello")

		env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.OCI = reg.Ref("charts/greeter", "9.9.9") })
		got := bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonNotFound)
		if got.Status.Source == nil || got.Status.Source.Digest != pulled {
			t.Fatalf("status.source = %+v; want the digest pulled before, %s", got.Status.Source, pulled)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSourceReady); !strings.Contains(c.Message, "parents keep rendering") {
			t.Errorf("SourceReady does not say parents keep the chart pulled before: %s", c.Message)
		}
		testenv.Consistently(t, 3*time.Second, "the Composition keeps its objects", func() (bool, error) {
			c := env.GetComposition(t, ns, "keeps")
			cm := &corev1.ConfigMap{}
			err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "keeps-cfg"}, cm)
			return err == nil && meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionReady), err
		})
	})
}

// TestBundleSourceInterval: a tag is resolved again once the interval
// passes, not before.
func TestBundleSourceInterval(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "", "")
	_, first := reg.Push(t, "charts/greeter", "stable", greeter(t, "1.0.0", "hello"))
	_, ca := sourceSecrets(t, "interval-"+ns, reg.Host, "x", "y", reg.CA)
	slow := sourceBundle(t, "slow-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "stable"), CASecretRef: ca})
	fast := sourceBundle(t, "fast-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "stable"), CASecretRef: ca, Interval: &metav1.Duration{Duration: time.Second}})
	for _, b := range []*v1alpha1.Bundle{slow, fast} {
		if got := bundleSource(t, b.Name, metav1.ConditionTrue, "").Status.Source.Digest; got != first {
			t.Fatalf("Bundle %s pulled %s; want %s", b.Name, got, first)
		}
	}
	_, second := reg.Push(t, "charts/greeter", "stable", greeter(t, "1.0.1", "hi"))
	testenv.Eventually(t, 0, "the tag resolved again after the interval", func() (bool, error) {
		b := &v1alpha1.Bundle{}
		err := env.Get(context.Background(), client.ObjectKey{Name: fast.Name}, b)
		return err == nil && b.Status.Source != nil && b.Status.Source.Digest == second, err
	})
	b := &v1alpha1.Bundle{}
	if err := env.Get(context.Background(), client.ObjectKey{Name: slow.Name}, b); err != nil {
		t.Fatal(err)
	}
	if b.Status.Source.Digest != first {
		t.Errorf("Bundle %s resolved its tag again before its interval: %s", slow.Name, b.Status.Source.Digest)
	}
}

// TestAdmissionBundleSource: the webhook previews a Composition of a
// Bundle with a source from the pulled chart (refusing invalid values as
// for any Bundle), and lets one of a Bundle never pulled through with a
// warning, without pulling anything itself.
func TestAdmissionBundleSource(t *testing.T) {
	ns := env.AdmissionNamespace(t)
	env.StartAdmission(t, "stencil-validating-source", "admission-source", map[string]string{"kubernetes.io/metadata.name": ns}, admission.Options{})
	reg := sourcetest.NewRegistry(t, "", "")
	reg.Push(t, "charts/shop", "1.0.0", sourcetest.Chart(t, "shop", "1.0.0", suite.ShopFiles()))
	_, ca := sourceSecrets(t, "adm-"+ns, reg.Host, "x", "y", reg.CA)

	pulled := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "adm-src-" + ns},
		Spec: v1alpha1.BundleSpec{Source: &v1alpha1.BundleSource{OCI: reg.Ref("charts/shop", "1.0.0"), CASecretRef: ca}}}
	suite.WithShopSchema(&pulled.Spec)
	env.MustCreate(t, pulled)
	t.Cleanup(func() { _ = env.Delete(context.Background(), pulled) })
	env.BundleReady(t, pulled.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns, pulled.Name)

	never := sourceBundle(t, "adm-never-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/shop", "9.9.9"), CASecretRef: ca})
	bundleSource(t, never.Name, metav1.ConditionFalse, source.ReasonNotFound)
	c, warnings := env.WarningClient(t)
	dryRun := func() string {
		t.Helper()
		warnings.Take()
		if err := c.Create(context.Background(), suite.Composition(ns, "early", never.Name, `{"replicas":9}`), client.DryRunAll); err != nil {
			t.Fatalf("a Composition of a Bundle never pulled: %v; want it allowed with a warning", err)
		}
		return strings.Join(warnings.Take(), "\n")
	}
	// The webhook's cache holds the Bundle some time after its status
	// says it was never pulled: until then the review warns it is not
	// found.
	testenv.Eventually(t, 0, "the webhook to know Bundle "+never.Name, func() (bool, error) {
		w := dryRun()
		return !strings.Contains(w, "Bundle "+never.Name+" not found"), fmt.Errorf("warnings %q", w)
	})
	if w := dryRun(); !strings.Contains(w, "not pulled yet") {
		t.Errorf("warnings %q; want one saying the chart is not pulled yet", w)
	}
}
