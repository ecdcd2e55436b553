package pull

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
)

// Puller pulls the charts of Bundles with a source.
type Puller struct {
	// Reader reads Secrets (the API server's, not a cache: the controller
	// watches no Secret).
	Reader client.Reader
	// Namespace is the controller's own namespace, the only one a
	// source's Secrets are read from.
	Namespace string
	// Cache keeps the charts pulled, by digest.
	Cache *source.Cache
	// Policy is where pulls may go: the cluster admin's (see
	// source.Policy), never a Bundle's.
	Policy source.Policy
}

// NotPulledError says a Bundle's source has no chart recorded yet.
type NotPulledError struct {
	// Bundle is the Bundle's name.
	Bundle string
	// Why is the reason and message of its SourceReady condition, if any.
	Why string
}

func (e *NotPulledError) Error() string {
	msg := fmt.Sprintf("the chart of Bundle %s is not pulled yet", e.Bundle)
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

// Resolve resolves b's source again (its tag or range) and pulls the
// chart it resolves to. Every error is a *source.Error.
func (p *Puller) Resolve(ctx context.Context, b *v1alpha1.Bundle) (*source.Artifact, error) {
	creds, err := p.credentials(ctx, *b.Spec.Source)
	if err != nil {
		return nil, err
	}
	return source.Fetch(ctx, *b.Spec.Source, creds, source.Options{Cache: p.Cache, Policy: p.Policy})
}

// Files returns b, or for a Bundle with a source and no files a copy
// whose spec.files are the chart of the digest b's status.source
// records, from the cache or pulled again by that digest (and verified
// again). A Bundle with no digest recorded, or whose chart is being
// verified again, gives a *NotPulledError; one whose chart failed its
// verification an *UnverifiedError (see Verified), never the chart.
func (p *Puller) Files(ctx context.Context, b *v1alpha1.Bundle) (*v1alpha1.Bundle, error) {
	if !HasSource(b) {
		return b, nil
	}
	out, err := p.Cached(b)
	var notPulled *NotPulledError
	var unverified *UnverifiedError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &notPulled), errors.As(err, &unverified):
		return nil, err
	}
	creds, err := p.credentials(ctx, *b.Spec.Source)
	if err != nil {
		return nil, err
	}
	a, err := source.Fetch(ctx, *b.Spec.Source, creds, source.Options{Cache: p.Cache, Pin: b.Status.Source, Policy: p.Policy})
	if err != nil {
		return nil, fmt.Errorf("pull the chart of Bundle %s again (%s): %w", b.Name, b.Status.Source.Digest, err)
	}
	return withFiles(b, a.Files), nil
}

// Cached is Files from the cache only, for a caller that must not wait
// on a registry (the admission webhook): a chart not in the cache is an
// error, a *NotPulledError when none is recorded, and the chart is given
// only when Verified allows it.
func (p *Puller) Cached(b *v1alpha1.Bundle) (*v1alpha1.Bundle, error) {
	if !HasSource(b) {
		return b, nil
	}
	st := b.Status.Source
	if st == nil || st.Digest == "" {
		why := ""
		if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionSourceReady); c != nil && c.Status == "False" {
			why = c.Reason + ": " + c.Message
		}
		return nil, &NotPulledError{Bundle: b.Name, Why: why}
	}
	if err := Verified(b); err != nil {
		return nil, err
	}
	if p.Cache != nil {
		if a, ok := p.Cache.Get(st.Digest); ok {
			return withFiles(b, a.Files), nil
		}
	}
	return nil, fmt.Errorf("the chart of Bundle %s (%s) is not in this replica's cache yet", b.Name, st.Digest)
}

// HasSource reports a Bundle whose files come from its source.
func HasSource(b *v1alpha1.Bundle) bool {
	return b.Spec.Source != nil && len(b.Spec.Files) == 0
}

// withFiles is a copy of b holding files. files is shared, never written.
func withFiles(b *v1alpha1.Bundle, files map[string]string) *v1alpha1.Bundle {
	out := b.DeepCopy()
	out.Spec.Files = files
	return out
}

// credentials reads the Secrets src names, in p.Namespace only: the
// registry's credentials, its CA, and the keys spec.source.verify checks
// the chart's signature with (source.KeyCosignPub or source.KeyKeyring
// of verify.secretRef). Each must carry the label
// stencil.dev/secret-type=bundle-source, else it is refused
// (SecretRefused) and its content never read. A Secret that is missing
// or lacks its keys is an InvalidSource error naming it; any other
// failure to read it is returned for a retry.
func (p *Puller) credentials(ctx context.Context, src v1alpha1.BundleSource) (source.Credentials, error) {
	auth, err := p.secret(ctx, src.SecretRef, "secretRef")
	if err != nil {
		return source.Credentials{}, err
	}
	ca, err := p.secret(ctx, src.CASecretRef, "caSecretRef")
	if err != nil {
		return source.Credentials{}, err
	}
	creds, err := source.CredentialsFromSecrets(auth, ca)
	if err != nil {
		return creds, invalidSource(err)
	}
	if v := src.Verify; v != nil {
		keys, err := p.secret(ctx, &v.SecretRef, "verify.secretRef")
		if err != nil {
			return creds, err
		}
		if creds.VerifyKeys, err = source.VerifyKeysFromSecret(keys, v.Provider); err != nil {
			return creds, invalidSource(err)
		}
	}
	return creds, nil
}

// invalidSource is err as a *source.Error: its own, else one of reason
// InvalidSource.
func invalidSource(err error) error {
	var serr *source.Error
	if errors.As(err, &serr) {
		return serr
	}
	return &source.Error{Reason: source.ReasonInvalidSource, Msg: err.Error()}
}

// secret reads the Secret ref names for spec.source's field, in
// p.Namespace only, and refuses it (SecretRefused) unless it carries the
// label stencil.dev/secret-type=bundle-source. A nil ref is no Secret.
func (p *Puller) secret(ctx context.Context, ref *corev1.LocalObjectReference, field string) (*corev1.Secret, error) {
	if ref == nil {
		return nil, nil
	}
	if ref.Name == "" {
		return nil, &source.Error{Reason: source.ReasonInvalidSource, Msg: fmt.Sprintf("spec.source.%s: no Secret named", field)}
	}
	if p.Namespace == "" {
		return nil, &source.Error{Reason: source.ReasonInvalidSource, Msg: fmt.Sprintf("spec.source.%s: the controller's namespace is not set (--namespace)", field)}
	}
	s := &corev1.Secret{}
	err := p.Reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: ref.Name}, s)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &source.Error{Reason: source.ReasonInvalidSource, Msg: fmt.Sprintf("spec.source.%s: no Secret %s in the controller's namespace %s", field, ref.Name, p.Namespace)}
	case err != nil:
		return nil, &source.Error{Reason: source.ReasonPullFailed, Msg: fmt.Sprintf("read Secret %s/%s", p.Namespace, ref.Name), Err: err}
	case s.Labels[v1alpha1.LabelSecretType] != v1alpha1.SecretTypeBundleSource:
		return nil, &source.Error{Reason: source.ReasonSecretRefused, Msg: fmt.Sprintf("spec.source.%s: Secret %s is not labelled %s=%s: a Bundle names only the Secrets the cluster admin marked for Bundle sources",
			field, ref.Name, v1alpha1.LabelSecretType, v1alpha1.SecretTypeBundleSource)}
	}
	return s, nil
}
