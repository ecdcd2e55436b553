package source_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

func verification(provider string) *v1alpha1.SourceVerification {
	return &v1alpha1.SourceVerification{Provider: provider, SecretRef: corev1.LocalObjectReference{Name: "chart-keys"}}
}

// TestSourceCosign: with verify.provider cosign, an OCI chart is returned
// only with a cosign signature of its manifest by one of the keys given,
// on a cache hit and on a pull by the digest status.source pinned too;
// a chart refused is not cached.
func TestSourceCosign(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	key, other := sourcetest.NewCosignKey(t), sourcetest.NewCosignKey(t)
	signedManifest, signedLayer := reg.Push(t, "charts/signed", "1.0.0", sourcetest.Chart(t, "signed", "1.0.0", podinfo))
	reg.Sign(t, key, "charts/signed", signedManifest)
	unsignedManifest, unsignedLayer := reg.Push(t, "charts/unsigned", "1.0.0", sourcetest.Chart(t, "unsigned", "1.0.0", podinfo))
	creds := func(keys []byte) source.Credentials {
		return source.Credentials{Username: "robot", Password: "s3cret", CA: reg.CA, VerifyKeys: keys}
	}
	spec := func(repo string) v1alpha1.BundleSource {
		return v1alpha1.BundleSource{OCI: reg.Ref(repo, "1.0.0"), Verify: verification(source.ProviderCosign)}
	}

	t.Run("signed", func(t *testing.T) {
		cache := source.NewCache(0)
		for _, what := range []string{"pull", "cache hit"} {
			a, err := source.Fetch(ctx(t), spec("charts/signed"), creds(key.PublicPEM), source.Options{Cache: cache, Policy: allowLoopback})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if a.Digest != signedLayer || a.ManifestDigest != signedManifest {
				t.Errorf("%s: artifact %s %s; want %s %s", what, a.Digest, a.ManifestDigest, signedLayer, signedManifest)
			}
			if a.KeysFingerprint != source.Fingerprint(key.PublicPEM) {
				t.Errorf("%s: keys fingerprint %q; want %q", what, a.KeysFingerprint, source.Fingerprint(key.PublicPEM))
			}
		}
		// Either of two keys.
		both := append(append([]byte{}, other.PublicPEM...), key.PublicPEM...)
		if _, err := source.Fetch(ctx(t), spec("charts/signed"), creds(both), loopback); err != nil {
			t.Errorf("with the signer's key second in cosign.pub: %v", err)
		}
	})
	t.Run("unsigned", func(t *testing.T) {
		cache := source.NewCache(0)
		_, err := source.Fetch(ctx(t), spec("charts/unsigned"), creds(key.PublicPEM), source.Options{Cache: cache, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
		if cache.Len() != 0 {
			t.Errorf("a chart refused is cached")
		}
	})
	t.Run("unsigned, cache hit", func(t *testing.T) {
		cache := source.NewCache(0)
		if _, err := source.Fetch(ctx(t), v1alpha1.BundleSource{OCI: reg.Ref("charts/unsigned", "1.0.0")}, creds(nil), source.Options{Cache: cache, Policy: allowLoopback}); err != nil {
			t.Fatal(err)
		}
		_, err := source.Fetch(ctx(t), spec("charts/unsigned"), creds(key.PublicPEM), source.Options{Cache: cache, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
	})
	t.Run("unsigned, pinned", func(t *testing.T) {
		pin := &v1alpha1.SourceStatus{URL: reg.Ref("charts/unsigned", unsignedManifest), Digest: unsignedLayer}
		_, err := source.Fetch(ctx(t), spec("charts/unsigned"), creds(key.PublicPEM), source.Options{Pin: pin, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
	})
	t.Run("signed, pinned", func(t *testing.T) {
		pin := &v1alpha1.SourceStatus{URL: reg.Ref("charts/signed", signedManifest), Digest: signedLayer}
		if _, err := source.Fetch(ctx(t), spec("charts/signed"), creds(key.PublicPEM), source.Options{Pin: pin, Policy: allowLoopback}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("another key", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), spec("charts/signed"), creds(other.PublicPEM), loopback)
		wantReason(t, err, source.ReasonSignatureInvalid)
	})
	t.Run("bad key", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), spec("charts/signed"), creds([]byte("not-a-pem-secret")), loopback)
		wantReason(t, err, source.ReasonInvalidKey)
		if strings.Contains(err.Error(), "not-a-pem-secret") {
			t.Errorf("the error quotes the key: %v", err)
		}
	})
	t.Run("no key", func(t *testing.T) {
		_, err := source.Fetch(ctx(t), spec("charts/signed"), creds(nil), loopback)
		wantReason(t, err, source.ReasonInvalidSource)
	})
	t.Run("helm provider on an OCI chart", func(t *testing.T) {
		s := spec("charts/signed")
		s.Verify = verification(source.ProviderHelm)
		_, err := source.Fetch(ctx(t), s, creds(key.PublicPEM), loopback)
		wantReason(t, err, source.ReasonInvalidSource)
	})
}

// TestSourceProvenance: with verify.provider helm, a chart repository's
// chart is returned only with a provenance file (CHART.tgz.prov, beside
// it on the same host) signed by the keyring given and naming the
// archive's digest; the cache does not bypass it, nor does a pin.
func TestSourceProvenance(t *testing.T) {
	repo := sourcetest.NewRepo(t, "", "")
	key, other := sourcetest.NewPGPKey(t), sourcetest.NewPGPKey(t)
	signed := sourcetest.Chart(t, "signed", "1.0.0", podinfo)
	repo.AddSigned(t, key, "signed", "1.0.0", signed)
	repo.Add("unsigned", "1.0.0", sourcetest.Chart(t, "unsigned", "1.0.0", podinfo), nil)
	// tampered: a signed provenance file whose text was changed after.
	repo.AddSigned(t, key, "tampered", "1.0.0", sourcetest.Chart(t, "tampered", "1.0.0", podinfo))
	tgz := sourcetest.Chart(t, "tampered", "1.0.0", podinfo)
	prov := key.Provenance(t, "apiVersion: v2\nname: tampered\nversion: 1.0.0\n", "tampered-1.0.0.tgz", tgz)
	repo.Serve("/charts/tampered-1.0.0.tgz.prov", bytes.Replace(prov, []byte("name: tampered"), []byte("name: tampereD"), 1))
	// swapped: the archive served is not the one the provenance signs.
	repo.Add("swapped", "1.0.0", sourcetest.Chart(t, "swapped", "1.0.0", podinfo), nil)
	repo.Serve("/charts/swapped-1.0.0.tgz.prov", key.Provenance(t, "apiVersion: v2\nname: swapped\nversion: 1.0.0\n", "swapped-1.0.0.tgz", []byte("another archive")))

	spec := func(chart string) v1alpha1.BundleSource {
		return v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: chart}, Verify: verification(source.ProviderHelm)}
	}
	creds := func(keyring []byte) source.Credentials { return source.Credentials{CA: repo.CA, VerifyKeys: keyring} }

	t.Run("signed", func(t *testing.T) {
		a, err := source.Fetch(ctx(t), spec("signed"), creds(key.Keyring), source.Options{Cache: source.NewCache(0), Policy: allowLoopback})
		if err != nil {
			t.Fatal(err)
		}
		if want := repo.URL + "/charts/signed-1.0.0.tgz.prov"; a.ProvenanceURL != want || !strings.HasPrefix(string(a.Provenance), "-----BEGIN PGP SIGNED MESSAGE") {
			t.Errorf("provenance %s; want %s and its content", a.ProvenanceURL, want)
		}
		pin := &v1alpha1.SourceStatus{URL: a.URL, Digest: a.Digest, Version: a.Version}
		if _, err := source.Fetch(ctx(t), spec("signed"), creds(key.Keyring), source.Options{Pin: pin, Policy: allowLoopback}); err != nil {
			t.Errorf("pinned: %v", err)
		}
	})
	t.Run("no provenance file", func(t *testing.T) {
		cache := source.NewCache(0)
		_, err := source.Fetch(ctx(t), spec("unsigned"), creds(key.Keyring), source.Options{Cache: cache, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
		if cache.Len() != 0 {
			t.Errorf("a chart refused is cached")
		}
		// Cached by a pull without verification: still refused.
		unverified := spec("unsigned")
		unverified.Verify = nil
		a, err := source.Fetch(ctx(t), unverified, creds(nil), source.Options{Cache: cache, Policy: allowLoopback})
		if err != nil {
			t.Fatal(err)
		}
		_, err = source.Fetch(ctx(t), spec("unsigned"), creds(key.Keyring), source.Options{Cache: cache, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
		pin := &v1alpha1.SourceStatus{URL: a.URL, Digest: a.Digest, Version: a.Version}
		_, err = source.Fetch(ctx(t), spec("unsigned"), creds(key.Keyring), source.Options{Cache: cache, Pin: pin, Policy: allowLoopback})
		wantReason(t, err, source.ReasonUnsigned)
	})
	for _, tt := range []struct {
		name, chart string
		keyring     []byte
		reason      string
	}{
		{"tampered provenance", "tampered", key.Keyring, source.ReasonSignatureInvalid},
		{"archive other than the signed one", "swapped", key.Keyring, source.ReasonSignatureInvalid},
		{"another keyring", "signed", other.Keyring, source.ReasonSignatureInvalid},
		{"keyring that does not parse", "signed", []byte("secret-keyring-bytes"), source.ReasonInvalidKey},
		{"no keyring", "signed", nil, source.ReasonInvalidSource},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := source.Fetch(ctx(t), spec(tt.chart), creds(tt.keyring), loopback)
			wantReason(t, err, tt.reason)
			if strings.Contains(err.Error(), "secret-keyring-bytes") {
				t.Errorf("the error quotes the keyring: %v", err)
			}
		})
	}
	t.Run("cosign provider on a chart repository", func(t *testing.T) {
		s := spec("signed")
		s.Verify = verification(source.ProviderCosign)
		_, err := source.Fetch(ctx(t), s, creds(key.Keyring), loopback)
		wantReason(t, err, source.ReasonInvalidSource)
	})
}

// TestVerifyKeysFromSecret: the key of the provider, named in the error
// when missing, its value never.
func TestVerifyKeysFromSecret(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{source.KeyCosignPub: []byte("pem")}}
	s.Name = "chart-keys"
	if got, err := source.VerifyKeysFromSecret(s, source.ProviderCosign); err != nil || string(got) != "pem" {
		t.Errorf("cosign: %q %v", got, err)
	}
	_, err := source.VerifyKeysFromSecret(s, source.ProviderHelm)
	if err == nil || !strings.Contains(err.Error(), "chart-keys") || !strings.Contains(err.Error(), source.KeyKeyring) || strings.Contains(err.Error(), "pem") {
		t.Errorf("helm without keyring: %v; want an error naming the Secret and key %s", err, source.KeyKeyring)
	}
}
