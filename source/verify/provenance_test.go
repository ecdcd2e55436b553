package verify

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

const testChartYAML = `apiVersion: v2
appVersion: 6.5.0
description: A Helm chart for Kubernetes
name: podinfo
version: 6.5.0
`

// newPGPKey makes an OpenPGP key; config may set its algorithm and time.
func newPGPKey(t *testing.T, config *packet.Config) *openpgp.Entity {
	t.Helper()
	if config == nil {
		config = &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	}
	e, err := openpgp.NewEntity("Chart Signer", "test", "signer@example.com", config)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// armoredKeyring is the public keys of es as `gpg --export --armor`
// writes them.
func armoredKeyring(t *testing.T, es ...*openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := e.Serialize(w); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// binaryKeyring is the public keys of es as `gpg --export` writes them.
func binaryKeyring(t *testing.T, es ...*openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range es {
		if err := e.Serialize(&buf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// provMessage is the text Helm clear-signs: Chart.yaml, YAML's document
// end marker, and the archive's digest by file name.
func provMessage(archiveName, digest string) string {
	return testChartYAML + "\n...\nfiles:\n  " + archiveName + ": " + digest + "\n"
}

// clearSign signs msg with e as `helm package --sign` does (SHA-512).
func clearSign(t *testing.T, e *openpgp.Entity, msg string, config *packet.Config) []byte {
	t.Helper()
	if config == nil {
		config = &packet.Config{}
	}
	config.DefaultHash = crypto.SHA512
	var buf bytes.Buffer
	w, err := clearsign.Encode(&buf, e.PrivateKey, config)
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

func TestProvenance(t *testing.T) {
	const name = "podinfo-6.5.0.tgz"
	archive := []byte("\x1f\x8b chart archive bytes")
	signer, other := newPGPKey(t, nil), newPGPKey(t, nil)
	rsaSigner := newPGPKey(t, &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048})
	valid := clearSign(t, signer, provMessage(name, sha256Of(archive)), nil)

	past := time.Now().Add(-48 * time.Hour)
	pastConfig := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return past }, KeyLifetimeSecs: 3600}
	expired := newPGPKey(t, pastConfig)

	tests := []struct {
		name    string
		archive []byte
		prov    []byte
		keyring []byte
		want    error // nil: verifies
	}{
		// Provenance that verifies.
		{"armored keyring", archive, valid, armoredKeyring(t, signer), nil},
		{"binary keyring", archive, valid, binaryKeyring(t, signer), nil},
		{"signer is the second key of the keyring", archive, valid, armoredKeyring(t, other, signer), nil},
		{"keyring of concatenated armored exports", archive, valid,
			append(armoredKeyring(t, other), armoredKeyring(t, signer)...), nil},
		{"RSA key", archive, clearSign(t, rsaSigner, provMessage(name, sha256Of(archive)), nil),
			binaryKeyring(t, rsaSigner), nil},

		// No provenance.
		{"no provenance file", archive, nil, armoredKeyring(t, signer), ErrUnsigned},
		{"blank provenance file", archive, []byte("\n  \n"), armoredKeyring(t, signer), ErrUnsigned},

		// Provenance refused.
		{"tampered archive", append([]byte("evil"), archive...), valid, armoredKeyring(t, signer), ErrSignatureInvalid},
		{"signed by another key", archive, valid, armoredKeyring(t, other), ErrSignatureInvalid},
		{"signed text changed after signing", archive,
			bytes.Replace(valid, []byte("podinfo-6.5.0.tgz: sha256:"), []byte("podinfo-6.5.0.tgz: sha256:0"), 1),
			armoredKeyring(t, signer), ErrSignatureInvalid},
		{"provenance of another archive name", archive,
			clearSign(t, signer, provMessage("other-1.0.0.tgz", sha256Of(archive)), nil),
			armoredKeyring(t, signer), ErrSignatureInvalid},
		{"digest outside the signed block is ignored", []byte("evil"),
			append(valid[:len(valid):len(valid)], "\n...\nfiles:\n  "+name+": "+sha256Of([]byte("evil"))+"\n"...),
			armoredKeyring(t, signer), ErrSignatureInvalid},
		{"signed text without a files part", archive, clearSign(t, signer, testChartYAML, nil),
			armoredKeyring(t, signer), ErrSignatureInvalid},
		{"no clear-signed block", archive, []byte(provMessage(name, sha256Of(archive))),
			armoredKeyring(t, signer), ErrSignatureInvalid},
		{"signed by a key that has expired", archive,
			clearSign(t, expired, provMessage(name, sha256Of(archive)), &packet.Config{Time: func() time.Time { return past }}),
			armoredKeyring(t, expired), ErrSignatureInvalid},
		{"provenance over the size limit", archive,
			append(valid[:len(valid):len(valid)], bytes.Repeat([]byte("x"), MaxProvenanceSize)...),
			armoredKeyring(t, signer), ErrSignatureInvalid},

		// Keyrings that do not parse.
		{"keyring is empty", archive, valid, nil, ErrBadKey},
		{"keyring is not OpenPGP", archive, valid, []byte("secret-bytes"), ErrBadKey},
		{"armored keyring is truncated", archive, valid, armoredKeyring(t, signer)[:80], ErrBadKey},
		{"armored block is not a key", archive, valid, valid, ErrBadKey},
		{"keyring is a GnuPG keybox", archive, valid, []byte("\x00\x00\x00\x20\x01\x01\x00\x00KBXf\x00\x00\x00\x00"), ErrBadKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Provenance(tt.archive, name, tt.prov, tt.keyring)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Provenance: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Provenance: %v, want %v", err, tt.want)
			}
			for _, s := range []string{"secret-bytes", "BEGIN PGP", "apiVersion"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes key material or signed content %q", err, s)
				}
			}
		})
	}
}
