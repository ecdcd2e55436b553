package pull

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
)

// UnverifiedError says a Bundle's recorded chart failed
// spec.source.verify's check when it was verified again (its keys or its
// source changed): its parents stall, and nothing is rendered from it.
type UnverifiedError struct {
	// Bundle is the Bundle's name; Digest the chart's.
	Bundle, Digest string
	// Reason and Message are the Bundle's SourceReady condition's: the
	// verification's verdict.
	Reason, Message string
}

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("the chart of Bundle %s (%s) failed spec.source.verify's check: %s: %s", e.Bundle, e.Digest, e.Reason, e.Message)
}

// Verified reports whether b's recorded chart may be rendered: a Bundle
// without spec.source.verify, or one whose status.source records that
// the chart passed the check of its provider with the keys of
// keysFingerprint for b's generation. Otherwise it returns an
// *UnverifiedError when the Bundle controller found that the chart fails
// the check (status.source.verified emptied, SourceReady=False for this
// generation with a verdict, see source.IsVerdict), else a
// *NotPulledError: the check is pending.
func Verified(b *v1alpha1.Bundle) error {
	v, st := b.Spec.Source.Verify, b.Status.Source
	switch {
	case v == nil:
		return nil
	case st == nil || st.Digest == "":
		return &NotPulledError{Bundle: b.Name}
	case st.Verified == v.Provider && st.KeysFingerprint != "" && st.VerifiedGeneration == b.Generation:
		return nil
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionSourceReady)
	if st.Verified == "" && c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == b.Generation && source.IsVerdict(c.Reason) {
		return &UnverifiedError{Bundle: b.Name, Digest: st.Digest, Reason: c.Reason, Message: c.Message}
	}
	return &NotPulledError{Bundle: b.Name, Why: fmt.Sprintf("the chart recorded (%s) is verified again (spec.source.verify's %s check) for the Bundle's current keys and source before it is rendered again", st.Digest, v.Provider)}
}

// Fingerprint is the source.Fingerprint of the keys b's
// spec.source.verify names (read as for a pull), "" for a Bundle without
// verify. Every error is a *source.Error.
func (p *Puller) Fingerprint(ctx context.Context, b *v1alpha1.Bundle) (string, error) {
	v := b.Spec.Source.Verify
	if v == nil {
		return "", nil
	}
	s, err := p.secret(ctx, &v.SecretRef, "verify.secretRef")
	if err != nil {
		return "", err
	}
	keys, err := source.VerifyKeysFromSecret(s, v.Provider)
	if err != nil {
		return "", invalidSource(err)
	}
	return source.Fingerprint(keys), nil
}

// Reverify pulls the chart b's status.source records again, by its digest,
// and checks its signature with the keys b's spec.source.verify names
// now. When the chart fails with a verdict (source.IsVerdict), it is
// dropped from the cache: it is never served from there again. Every
// error is a *source.Error.
func (p *Puller) Reverify(ctx context.Context, b *v1alpha1.Bundle) (*source.Artifact, error) {
	creds, err := p.credentials(ctx, *b.Spec.Source)
	if err != nil {
		return nil, err
	}
	a, err := source.Fetch(ctx, *b.Spec.Source, creds, source.Options{Cache: p.Cache, Pin: b.Status.Source, Policy: p.Policy})
	if err != nil && source.IsVerdict(source.Reason(err)) && p.Cache != nil {
		p.Cache.Remove(b.Status.Source.Digest)
	}
	return a, err
}
