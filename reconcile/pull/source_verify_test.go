package pull_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// verifySecret creates, in the controller's namespace, a Secret holding
// data, and returns the verification of provider naming it.
func verifySecret(t *testing.T, name, provider string, data map[string][]byte) *v1alpha1.SourceVerification {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: forSources(name), Data: data}
	env.MustCreate(t, s)
	t.Cleanup(func() { _ = env.Delete(context.Background(), s) })
	return &v1alpha1.SourceVerification{Provider: provider, SecretRef: corev1.LocalObjectReference{Name: name}}
}

// TestBundleSourceVerify: a Bundle whose spec.source.verify names a
// cosign key renders a chart signed with it; an unsigned chart is
// refused with reason Unsigned and its parents apply nothing; a
// re-resolve to an unsigned chart keeps the signed chart recorded and
// rendered once it verified again for the new generation, and says the
// new one was refused; verify added to a Bundle stalls its parents when
// the chart they rendered is unsigned.
func TestBundleSourceVerify(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "", "")
	key := sourcetest.NewCosignKey(t)
	m1, layer1 := reg.Push(t, "charts/greeter", "1.0.0", greeter(t, "1.0.0", "signed"))
	reg.Sign(t, key, "charts/greeter", m1)
	reg.Push(t, "charts/greeter", "2.0.0", greeter(t, "2.0.0", "unsigned"))
	_, ca := sourceSecrets(t, "vfy-"+ns, reg.Host, "x", "y", reg.CA)
	verify := verifySecret(t, "vfy-"+ns+"-keys", source.ProviderCosign, map[string][]byte{source.KeyCosignPub: key.PublicPEM})

	t.Run("signed", func(t *testing.T) {
		b := sourceBundle(t, "signed-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), CASecretRef: ca, Verify: verify})
		got := bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
		if got.Status.Source.Digest != layer1 {
			t.Fatalf("status.source.digest = %s; want %s", got.Status.Source.Digest, layer1)
		}
		env.MustCreate(t, suite.Composition(ns, "signed", b.Name, ""))
		env.Condition(t, ns, "signed", v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapSays(t, ns, "signed-cfg", "signed")

		// A new tag, unsigned: refused, the signed chart stays.
		env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.OCI = reg.Ref("charts/greeter", "2.0.0") })
		got = bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source == nil || got.Status.Source.Digest != layer1 {
			t.Fatalf("status.source = %+v; want the signed chart's digest %s", got.Status.Source, layer1)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSourceReady); !strings.Contains(c.Message, "parents keep rendering") {
			t.Errorf("SourceReady does not say parents keep the chart pulled before: %s", c.Message)
		}
		env.UpdateComposition(t, suite.Composition(ns, "signed", b.Name, ""), func(c *v1alpha1.Composition) {
			c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"still signed"}`)}
		})
		configMapSays(t, ns, "signed-cfg", "still signed")
		cm := &corev1.ConfigMap{}
		if err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "signed-cfg"}, cm); err != nil || cm.Data["chart"] != "1.0.0" {
			t.Errorf("ConfigMap chart = %q (%v); want the signed chart 1.0.0", cm.Data["chart"], err)
		}
	})

	t.Run("unsigned", func(t *testing.T) {
		b := sourceBundle(t, "unsigned-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "2.0.0"), CASecretRef: ca, Verify: verify})
		got := bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source != nil && got.Status.Source.Digest != "" {
			t.Errorf("status.source = %+v; want no chart recorded", got.Status.Source)
		}
		env.BundleReady(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		env.MustCreate(t, suite.Composition(ns, "unsigned", b.Name, ""))
		c := env.Condition(t, ns, "unsigned", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSourceNotReady)
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceNotReady {
			t.Errorf("Ready = %+v; want reason %s", r, v1alpha1.ReasonSourceNotReady)
		}
		testenv.Consistently(t, 3*time.Second, "the Composition applies nothing", func() (bool, error) {
			err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "unsigned-cfg"}, &corev1.ConfigMap{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})

	t.Run("verify added to a Bundle rendering an unsigned chart", func(t *testing.T) {
		b := sourceBundle(t, "added-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "2.0.0"), CASecretRef: ca})
		got := bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
		if got.Status.Source.Verified != "" {
			t.Errorf("status.source.verified = %q for a Bundle without verify", got.Status.Source.Verified)
		}
		env.MustCreate(t, suite.Composition(ns, "added", b.Name, ""))
		env.Condition(t, ns, "added", v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapSays(t, ns, "added-cfg", "unsigned")

		// The admin now asks for a signature: the unsigned chart recorded
		// before fails the check, is not rendered again (the parent
		// stalls, naming the failure), and what it applied is kept.
		env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.Verify = verify })
		got = bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source == nil || got.Status.Source.Verified != "" {
			t.Fatalf("status.source = %+v; want the unverified chart still recorded as unverified", got.Status.Source)
		}
		env.UpdateComposition(t, suite.Composition(ns, "added", b.Name, ""), func(c *v1alpha1.Composition) {
			c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"must wait"}`)}
		})
		c := env.Condition(t, ns, "added", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSourceUnverified)
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceUnverified || !strings.Contains(r.Message, source.ReasonUnsigned) {
			t.Errorf("Ready = %+v; want reason %s naming %s", r, v1alpha1.ReasonSourceUnverified, source.ReasonUnsigned)
		}
		testenv.Consistently(t, 3*time.Second, "the unchecked chart is not rendered again, and nothing is pruned", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "added-cfg"}, cm); err != nil {
				return false, err
			}
			return cm.Data["greeting"] == "unsigned", nil
		})
	})

	t.Run("no key in the Secret", func(t *testing.T) {
		wrong := verifySecret(t, "vfy-"+ns+"-nokey", source.ProviderCosign, map[string][]byte{"other": key.PublicPEM})
		b := sourceBundle(t, "nokey-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), CASecretRef: ca, Verify: wrong})
		got := bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonInvalidSource)
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSourceReady)
		if !strings.Contains(c.Message, wrong.SecretRef.Name) || !strings.Contains(c.Message, source.KeyCosignPub) || strings.Contains(c.Message, "PUBLIC KEY") {
			t.Errorf("SourceReady message %q; want it to name Secret %s and key %s, never a value", c.Message, wrong.SecretRef.Name, source.KeyCosignPub)
		}
	})
}

// TestBundleSourceVerifyProvenance: a chart repository's chart with a
// provenance file signed by the keyring of the verify Secret renders;
// one without is refused, reason Unsigned.
func TestBundleSourceVerifyProvenance(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	repo := sourcetest.NewRepo(t, "", "")
	key := sourcetest.NewPGPKey(t)
	repo.AddSigned(t, key, "greeter", "1.0.0", greeter(t, "1.0.0", "provenance"))
	repo.Add("plain", "1.0.0", sourcetest.Chart(t, "plain", "1.0.0", nil), nil)
	_, ca := sourceSecrets(t, "prov-"+ns, repo.Host, "x", "y", repo.CA)
	verify := verifySecret(t, "prov-"+ns+"-keys", source.ProviderHelm, map[string][]byte{source.KeyKeyring: key.Keyring})

	b := sourceBundle(t, "prov-"+ns, v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "greeter"}, CASecretRef: ca, Verify: verify})
	bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
	env.MustCreate(t, suite.Composition(ns, "prov", b.Name, ""))
	env.Condition(t, ns, "prov", v1alpha1.ConditionReady, metav1.ConditionTrue)
	configMapSays(t, ns, "prov-cfg", "provenance")

	plain := sourceBundle(t, "plain-"+ns, v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "plain"}, CASecretRef: ca, Verify: verify})
	bundleSource(t, plain.Name, metav1.ConditionFalse, source.ReasonUnsigned)
}

// TestBundleSourceVerifyKeysRotated: a recorded verification holds for
// the keys it was made with. When the admin replaces the keys Secret's
// key by one that did not sign the chart, the chart is verified again at
// once (the Secret is watched), fails, and is never rendered again: its
// parents stall naming the failure, apply nothing and prune nothing.
// Once the chart is signed with the new key, they render again.
func TestBundleSourceVerifyKeysRotated(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	reg := sourcetest.NewRegistry(t, "", "")
	old, rotated := sourcetest.NewCosignKey(t), sourcetest.NewCosignKey(t)
	m1, _ := reg.Push(t, "charts/greeter", "1.0.0", greeter(t, "1.0.0", "signed"))
	reg.Sign(t, old, "charts/greeter", m1)
	_, ca := sourceSecrets(t, "rot-"+ns, reg.Host, "x", "y", reg.CA)
	verify := verifySecret(t, "rot-"+ns+"-keys", source.ProviderCosign, map[string][]byte{source.KeyCosignPub: old.PublicPEM})
	b := sourceBundle(t, "rot-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "1.0.0"), CASecretRef: ca, Verify: verify,
		Interval: &metav1.Duration{Duration: 2 * time.Second}})
	got := bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
	if got.Status.Source.KeysFingerprint != source.Fingerprint(old.PublicPEM) || got.Status.Source.VerifiedGeneration != got.Generation {
		t.Errorf("status.source = %+v; want the verification tied to the keys' fingerprint %s and generation %d", got.Status.Source, source.Fingerprint(old.PublicPEM), got.Generation)
	}
	env.MustCreate(t, suite.Composition(ns, "rot", b.Name, ""))
	env.Condition(t, ns, "rot", v1alpha1.ConditionReady, metav1.ConditionTrue)
	configMapSays(t, ns, "rot-cfg", "signed")

	// The admin rotates the key; the chart is signed by the old one only.
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testenv.ControllerNamespace, Name: verify.SecretRef.Name}}
	testenv.Update(t, env.Client, keys, func() { keys.Data[source.KeyCosignPub] = rotated.PublicPEM })
	testenv.Eventually(t, 0, "the chart recorded fails verification with the new key", func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := env.Get(context.Background(), client.ObjectKey{Name: "rot-" + ns}, b); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionSourceReady)
		return b.Status.Source != nil && b.Status.Source.Verified == "" && c != nil && c.Reason == source.ReasonSignatureInvalid, fmt.Errorf("status.source %+v, SourceReady %+v", b.Status.Source, c)
	})
	env.UpdateComposition(t, suite.Composition(ns, "rot", b.Name, ""), func(c *v1alpha1.Composition) {
		c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"not from an unverified chart"}`)}
	})
	c := env.Condition(t, ns, "rot", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSourceUnverified)
	if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceUnverified || !strings.Contains(r.Message, source.ReasonSignatureInvalid) {
		t.Errorf("Ready = %+v; want reason %s naming %s", r, v1alpha1.ReasonSourceUnverified, source.ReasonSignatureInvalid)
	}
	testenv.Consistently(t, 3*time.Second, "nothing is rendered from the chart, and nothing pruned", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "rot-cfg"}, cm); err != nil {
			return false, err
		}
		return cm.Data["greeting"] == "signed", nil
	})

	// The chart is signed with the new key: it verifies, and renders.
	reg.Sign(t, rotated, "charts/greeter", m1)
	configMapSays(t, ns, "rot-cfg", "not from an unverified chart")
	if got := bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled); got.Status.Source.KeysFingerprint != source.Fingerprint(rotated.PublicPEM) {
		t.Errorf("status.source.keysFingerprint = %s; want the new key's %s", got.Status.Source.KeysFingerprint, source.Fingerprint(rotated.PublicPEM))
	}
}
