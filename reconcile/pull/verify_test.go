package pull_test

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/source"
)

// TestVerified: a Bundle's recorded chart is rendered only while its
// record says it passed spec.source.verify's provider with the keys of
// its fingerprint for the Bundle's generation; a record that failed the
// check again stalls the parents, any other is a check to wait for.
func TestVerified(t *testing.T) {
	const gen = 3
	bundle := func(verify bool, rec v1alpha1.SourceStatus, cond *metav1.Condition) *v1alpha1.Bundle {
		b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "charts", Generation: gen},
			Spec: v1alpha1.BundleSpec{Source: &v1alpha1.BundleSource{OCI: "oci://registry.example.com/charts/app:1.0.0"}}}
		if verify {
			b.Spec.Source.Verify = &v1alpha1.SourceVerification{Provider: source.ProviderCosign}
		}
		rec.Digest = "sha256:aaaa"
		b.Status.Source = &rec
		if cond != nil {
			b.Status.Conditions = []metav1.Condition{*cond}
		}
		return b
	}
	verified := v1alpha1.SourceStatus{Verified: source.ProviderCosign, KeysFingerprint: "sha256:keys", VerifiedGeneration: gen}
	failed := func(reason string, generation int64) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionSourceReady, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: generation}
	}
	for _, tt := range []struct {
		name string
		b    *v1alpha1.Bundle
		want string // "", "wait" or "stall"
	}{
		{"no verify", bundle(false, v1alpha1.SourceStatus{}, nil), ""},
		{"verified for this generation with its keys", bundle(true, verified, nil), ""},
		{"verified, a new resolve refused", bundle(true, verified, failed(source.ReasonUnsigned, gen)), ""},
		{"verified for another generation", bundle(true, v1alpha1.SourceStatus{Verified: source.ProviderCosign, KeysFingerprint: "sha256:keys", VerifiedGeneration: gen - 1}, nil), "wait"},
		{"keys being verified again", bundle(true, v1alpha1.SourceStatus{Verified: source.ProviderCosign, VerifiedGeneration: gen}, nil), "wait"},
		{"recorded before keys were recorded", bundle(true, v1alpha1.SourceStatus{Verified: source.ProviderCosign}, nil), "wait"},
		{"verified by another provider", bundle(true, v1alpha1.SourceStatus{Verified: source.ProviderHelm, KeysFingerprint: "sha256:keys", VerifiedGeneration: gen}, nil), "wait"},
		{"failed again", bundle(true, v1alpha1.SourceStatus{}, failed(source.ReasonSignatureInvalid, gen)), "stall"},
		{"failed again, unsigned", bundle(true, v1alpha1.SourceStatus{}, failed(source.ReasonUnsigned, gen)), "stall"},
		{"unverified, the registry down", bundle(true, v1alpha1.SourceStatus{}, failed(source.ReasonPullFailed, gen)), "wait"},
		{"unverified, a verdict of another generation", bundle(true, v1alpha1.SourceStatus{}, failed(source.ReasonSignatureInvalid, gen-1)), "wait"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := pull.Verified(tt.b)
			var notPulled *pull.NotPulledError
			var unverified *pull.UnverifiedError
			got := ""
			switch {
			case errors.As(err, &unverified):
				got = "stall"
			case errors.As(err, &notPulled):
				got = "wait"
			case err != nil:
				t.Fatalf("Verified = %v; want nil, a *NotPulledError or an *UnverifiedError", err)
			}
			if got != tt.want {
				t.Errorf("Verified = %v (%q); want %q", err, got, tt.want)
			}
		})
	}
}
