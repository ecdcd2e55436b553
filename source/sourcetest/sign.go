package sourcetest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// CosignKey is an ECDSA P-256 key, the kind `cosign generate-key-pair`
// makes.
type CosignKey struct {
	priv *ecdsa.PrivateKey
	// PublicPEM is the public key as cosign.pub holds it (PEM, PKIX).
	PublicPEM []byte
}

// NewCosignKey generates a CosignKey.
func NewCosignKey(t testing.TB) *CosignKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return &CosignKey{priv: k, PublicPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}
}

// Sign stores k's signature of the artifact of manifest digest in repo
// (such as charts/podinfo) as `cosign sign --key` does: at tag
// sha256-HEX.sig of the same repository, a manifest whose one layer
// (application/vnd.dev.cosign.simplesigning.v1+json) is the simple-signing
// payload naming the repository and digest, its annotation
// dev.cosignproject.cosign/signature the base64 ASN.1 ECDSA signature of
// the payload's sha256.
func (r *Registry) Sign(t testing.TB, k *CosignKey, repo, manifest string) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": r.Host + "/" + repo},
			"image":    map[string]string{"docker-manifest-digest": manifest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), "application/vnd.oci.image.config.v1+json")
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:       static.NewLayer(payload, "application/vnd.dev.cosign.simplesigning.v1+json"),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host + "/" + repo + ":" + strings.Replace(manifest, ":", "-", 1) + ".sig")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.remoteOptions()...); err != nil {
		t.Fatal(err)
	}
}

// remoteOptions reach r as a client of the test would.
func (r *Registry) remoteOptions() []remote.Option {
	opts := []remote.Option{remote.WithTransport(r.Client().Transport)}
	switch {
	case r.token != "":
		opts = append(opts, remote.WithAuth(&authn.Bearer{Token: r.token}))
	case r.user != "":
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass}))
	}
	return opts
}

// PGPKey is an OpenPGP key that signs Helm provenance files.
type PGPKey struct {
	entity *openpgp.Entity
	// Keyring is its public key, armored, as `gpg --export --armor`
	// writes it (a verify Secret's keyring).
	Keyring []byte
}

// NewPGPKey generates a PGPKey (EdDSA).
func NewPGPKey(t testing.TB) *PGPKey {
	t.Helper()
	e, err := openpgp.NewEntity("Chart Signer", "test", "signer@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return &PGPKey{entity: e, Keyring: buf.Bytes()}
}

// Provenance is the provenance file `helm package --sign` writes for the
// chart archive named archiveName (NAME-VERSION.tgz): its Chart.yaml
// (chartYAML), YAML's document end marker and the archive's sha256,
// clear-signed by k with SHA-512.
func (k *PGPKey) Provenance(t testing.TB, chartYAML, archiveName string, archive []byte) []byte {
	t.Helper()
	if !strings.HasSuffix(chartYAML, "\n") {
		chartYAML += "\n"
	}
	msg := chartYAML + "\n...\nfiles:\n  " + archiveName + ": sha256:" + digest(archive) + "\n"
	var buf bytes.Buffer
	w, err := clearsign.Encode(&buf, k.entity.PrivateKey, &packet.Config{DefaultHash: crypto.SHA512})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// AddSigned is Add (no edit) with the chart's provenance file, signed by
// k, served beside it at /charts/NAME-VERSION.tgz.prov.
func (r *Repo) AddSigned(t testing.TB, k *PGPKey, name, version string, chart []byte) {
	t.Helper()
	r.Add(name, version, chart, nil)
	file := name + "-" + version + ".tgz"
	chartYAML := "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n"
	r.Serve("/charts/"+file+".prov", k.Provenance(t, chartYAML, file, chart))
}
