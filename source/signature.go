package source

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source/verify"
)

// Providers of spec.source.verify.
const (
	// ProviderCosign checks an OCI chart's cosign signature (package
	// verify's Cosign) against the PEM public keys of KeyCosignPub.
	ProviderCosign = "cosign"
	// ProviderHelm checks a chart repository's provenance file
	// (CHART.tgz.prov, package verify's Provenance) against the OpenPGP
	// keyring of KeyKeyring.
	ProviderHelm = "helm"
)

// Keys of the Secret spec.source.verify.secretRef names.
const (
	// KeyCosignPub holds the PEM public keys of provider cosign.
	KeyCosignPub = "cosign.pub"
	// KeyKeyring holds the OpenPGP keyring (armored or binary) of
	// provider helm.
	KeyKeyring = "keyring"
)

// VerifyKey is the key of the verify Secret that holds provider's keys.
func VerifyKey(provider string) string {
	if provider == ProviderHelm {
		return KeyKeyring
	}
	return KeyCosignPub
}

// VerifyKeysFromSecret reads the key material of provider from s, the
// Secret spec.source.verify.secretRef names. The error names the Secret
// and the key, never a value.
func VerifyKeysFromSecret(s *corev1.Secret, provider string) ([]byte, error) {
	key := VerifyKey(provider)
	data := s.Data[key]
	if len(data) == 0 {
		if str, ok := s.StringData[key]; ok {
			data = []byte(str)
		}
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("spec.source.verify.secretRef: Secret %s has no key %s, which provider %s reads", s.Name, key, provider)
	}
	return data, nil
}

// checkVerify refuses a spec.source.verify that cannot be checked: a
// provider that does not fit the source (cosign signs OCI artifacts; a
// helm provenance file is read from a chart repository only, not from
// an OCI chart's provenance layer) or no key to check with.
func checkVerify(spec v1alpha1.BundleSource, creds Credentials) error {
	v := spec.Verify
	if v == nil {
		return nil
	}
	switch {
	case v.Provider == ProviderCosign && spec.OCI == "":
		return fail(ReasonInvalidSource, nil, "spec.source.verify.provider: cosign verifies an OCI chart (spec.source.oci); a chart repository's chart is verified with provider helm")
	case v.Provider == ProviderHelm && spec.OCI != "":
		return fail(ReasonInvalidSource, nil, "spec.source.verify.provider: helm verifies the provenance file of a chart repository's chart; an OCI chart is verified with provider cosign")
	case v.Provider != ProviderCosign && v.Provider != ProviderHelm:
		return fail(ReasonInvalidSource, nil, "spec.source.verify.provider: must be cosign or helm")
	case len(creds.VerifyKeys) == 0:
		return fail(ReasonInvalidSource, nil, "spec.source.verify: no key to verify with (the %s of Secret %s)", VerifyKey(v.Provider), v.SecretRef.Name)
	}
	return nil
}

// verifyCosign checks the cosign signature of the manifest digest in
// ref's repository, with the pull's remote options.
func verifyCosign(ctx context.Context, ref name.Reference, manifest string, keys []byte, ropts []remote.Option) error {
	repo := ref.Context().String()
	if err := verify.Cosign(ctx, repo, manifest, keys, ropts...); err != nil {
		return verifyError(err, "verify the cosign signature of %s@%s", repo, manifest)
	}
	return nil
}

// verifyProvenance checks the provenance file of the archive pulled from
// chartPath (its base name is what the provenance names).
func verifyProvenance(archive []byte, chartPath string, prov, keyring []byte) error {
	name := path.Base(chartPath)
	if err := verify.Provenance(archive, name, prov, keyring); err != nil {
		return verifyError(err, "verify the provenance of %s", name)
	}
	return nil
}

// IsVerdict reports a reason that is a verdict on a chart rather than a
// failure to reach it: its signature (Unsigned, SignatureInvalid, or keys
// that do not parse, InvalidKey), its digest (DigestMismatch) or its
// place (URLRefused). Trying again gives the same answer until the chart,
// the keys, the source or the admin's policy change.
func IsVerdict(reason string) bool {
	switch reason {
	case ReasonUnsigned, ReasonSignatureInvalid, ReasonInvalidKey, ReasonDigestMismatch, ReasonURLRefused:
		return true
	}
	return false
}

// verifyError is a failed verification as an *Error: Unsigned,
// SignatureInvalid or InvalidKey for package verify's verdicts,
// PullFailed for any other failure (a registry that cannot be reached:
// no verdict, retried).
func verifyError(err error, format string, args ...any) *Error {
	var serr *Error
	switch {
	case errors.Is(err, verify.ErrUnsigned):
		return fail(ReasonUnsigned, err, format, args...)
	case errors.Is(err, verify.ErrSignatureInvalid):
		return fail(ReasonSignatureInvalid, err, format, args...)
	case errors.Is(err, verify.ErrBadKey):
		return fail(ReasonInvalidKey, err, format, args...)
	case errors.As(err, &serr):
		return serr
	}
	return remoteError(err, format, args...)
}
