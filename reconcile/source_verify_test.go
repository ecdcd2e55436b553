package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// verifySecret creates, in the controller's namespace, a Secret holding
// data, and returns the verification of provider naming it.
func verifySecret(t *testing.T, name, provider string, data map[string][]byte) *v1alpha1.SourceVerification {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: forSources(name), Data: data}
	mustCreate(t, s)
	t.Cleanup(func() { _ = k.Delete(context.Background(), s) })
	return &v1alpha1.SourceVerification{Provider: provider, SecretRef: corev1.LocalObjectReference{Name: name}}
}

// TestBundleSourceVerify: a Bundle whose spec.source.verify names a
// cosign key renders a chart signed with it; an unsigned chart is
// refused with reason Unsigned and its parents apply nothing; a
// re-resolve to an unsigned chart keeps the signed chart recorded and
// rendered, and says the new one was refused.
func TestBundleSourceVerify(t *testing.T) {
	ns := testenv.Namespace(t, k)
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
		mustCreate(t, composition(ns, "signed", b.Name, ""))
		condition(t, ns, "signed", v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapSays(t, ns, "signed-cfg", "signed")

		// A new tag, unsigned: refused, the signed chart stays.
		updateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.OCI = reg.Ref("charts/greeter", "2.0.0") })
		got = bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source == nil || got.Status.Source.Digest != layer1 {
			t.Fatalf("status.source = %+v; want the signed chart's digest %s", got.Status.Source, layer1)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionSourceReady); !strings.Contains(c.Message, "parents keep rendering") {
			t.Errorf("SourceReady does not say parents keep the chart pulled before: %s", c.Message)
		}
		update(t, composition(ns, "signed", b.Name, ""), func(c *v1alpha1.Composition) {
			c.Spec.Values = jsonValues(`{"greeting":"still signed"}`)
		})
		configMapSays(t, ns, "signed-cfg", "still signed")
		cm := &corev1.ConfigMap{}
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "signed-cfg"}, cm); err != nil || cm.Data["chart"] != "1.0.0" {
			t.Errorf("ConfigMap chart = %q (%v); want the signed chart 1.0.0", cm.Data["chart"], err)
		}
	})

	t.Run("unsigned", func(t *testing.T) {
		b := sourceBundle(t, "unsigned-"+ns, v1alpha1.BundleSource{OCI: reg.Ref("charts/greeter", "2.0.0"), CASecretRef: ca, Verify: verify})
		got := bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source != nil && got.Status.Source.Digest != "" {
			t.Errorf("status.source = %+v; want no chart recorded", got.Status.Source)
		}
		bundleReady(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		mustCreate(t, composition(ns, "unsigned", b.Name, ""))
		c := condition(t, ns, "unsigned", v1alpha1.ConditionReconciling, metav1.ConditionTrue)
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceNotReady {
			t.Errorf("Ready = %+v; want reason %s", r, v1alpha1.ReasonSourceNotReady)
		}
		consistently(t, "the Composition applies nothing", 3*time.Second, func() (bool, error) {
			err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "unsigned-cfg"}, &corev1.ConfigMap{})
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
		mustCreate(t, composition(ns, "added", b.Name, ""))
		condition(t, ns, "added", v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapSays(t, ns, "added-cfg", "unsigned")

		// The admin now asks for a signature: the unsigned chart recorded
		// before is not rendered again, and what it applied is kept.
		updateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Source.Verify = verify })
		got = bundleSource(t, b.Name, metav1.ConditionFalse, source.ReasonUnsigned)
		if got.Status.Source == nil || got.Status.Source.Verified != "" {
			t.Fatalf("status.source = %+v; want the unverified chart still recorded as unverified", got.Status.Source)
		}
		update(t, composition(ns, "added", b.Name, ""), func(c *v1alpha1.Composition) {
			c.Spec.Values = jsonValues(`{"greeting":"must wait"}`)
		})
		c := condition(t, ns, "added", v1alpha1.ConditionReconciling, metav1.ConditionTrue)
		if r := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Reason != v1alpha1.ReasonSourceNotReady {
			t.Errorf("Ready = %+v; want reason %s", r, v1alpha1.ReasonSourceNotReady)
		}
		consistently(t, "the unchecked chart is not rendered again, and nothing is pruned", 3*time.Second, func() (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "added-cfg"}, cm); err != nil {
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
	ns := testenv.Namespace(t, k)
	repo := sourcetest.NewRepo(t, "", "")
	key := sourcetest.NewPGPKey(t)
	repo.AddSigned(t, key, "greeter", "1.0.0", greeter(t, "1.0.0", "provenance"))
	repo.Add("plain", "1.0.0", sourcetest.Chart(t, "plain", "1.0.0", nil), nil)
	_, ca := sourceSecrets(t, "prov-"+ns, repo.Host, "x", "y", repo.CA)
	verify := verifySecret(t, "prov-"+ns+"-keys", source.ProviderHelm, map[string][]byte{source.KeyKeyring: key.Keyring})

	b := sourceBundle(t, "prov-"+ns, v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "greeter"}, CASecretRef: ca, Verify: verify})
	bundleSource(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonPulled)
	mustCreate(t, composition(ns, "prov", b.Name, ""))
	condition(t, ns, "prov", v1alpha1.ConditionReady, metav1.ConditionTrue)
	configMapSays(t, ns, "prov-cfg", "provenance")

	plain := sourceBundle(t, "plain-"+ns, v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "plain"}, CASecretRef: ca, Verify: verify})
	bundleSource(t, plain.Name, metav1.ConditionFalse, source.ReasonUnsigned)
}
