package verify

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// minRSABits is the smallest RSA public key accepted for cosign.
const minRSABits = 2048

// parsePublicKeys reads the PEM "PUBLIC KEY" blocks (PKIX, as cosign writes
// cosign.pub) of a Secret's cosign.pub. Anything else in it (text outside a
// block, another block type, a key that does not parse or of an
// unsupported kind) makes the whole value refused, so a typo cannot silently
// leave fewer keys than the admin meant. Errors name the block by its
// position and never quote its content.
func parsePublicKeys(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	rest := bytes.TrimSpace(data)
	for n := 1; len(rest) > 0; n++ {
		block, r := pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%w: cosign.pub: data after PEM block %d is not PEM", ErrBadKey, n-1)
		}
		rest = bytes.TrimSpace(r)
		if block.Type != "PUBLIC KEY" {
			return nil, fmt.Errorf("%w: cosign.pub: PEM block %d is not a PUBLIC KEY block", ErrBadKey, n)
		}
		key, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: cosign.pub: PEM block %d is not a PKIX public key", ErrBadKey, n)
		}
		if err := checkKey(key); err != nil {
			return nil, fmt.Errorf("%w: cosign.pub: PEM block %d: %s", ErrBadKey, n, err)
		}
		if len(keys) == MaxKeys {
			return nil, fmt.Errorf("%w: cosign.pub holds more than %d keys", ErrBadKey, MaxKeys)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: cosign.pub holds no PEM public key", ErrBadKey)
	}
	return keys, nil
}

// checkKey accepts the key kinds cosign signs with: ECDSA on a NIST curve
// of at least 256 bits, RSA of at least minRSABits, Ed25519.
func checkKey(key crypto.PublicKey) error {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return nil
		}
		return fmt.Errorf("ECDSA curve is not P-256, P-384 or P-521")
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return fmt.Errorf("RSA key is shorter than %d bits", minRSABits)
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("key is not ECDSA, RSA or Ed25519")
}

// verifies reports whether sig is a signature of payload by key, as cosign
// makes it (sigstore's verifiers for a loaded public key): ECDSA (ASN.1)
// and RSA (PKCS #1 v1.5) over the SHA-256 of the payload; Ed25519 over the
// payload itself or, as `cosign sign` v2.6 makes it with an imported
// Ed25519 key (testdata/cosign), Ed25519ph over its SHA-512. An ECDSA key
// on P-384 or P-521 is also tried with the hash of its curve's size. A
// signature cannot verify under two hashes by accident, so accepting
// either weakens nothing.
func verifies(key crypto.PublicKey, payload, sig []byte) bool {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		d := sha256.Sum256(payload)
		if ecdsa.VerifyASN1(k, d[:], sig) {
			return true
		}
		switch k.Curve {
		case elliptic.P384():
			d := sha512.Sum384(payload)
			return ecdsa.VerifyASN1(k, d[:], sig)
		case elliptic.P521():
			d := sha512.Sum512(payload)
			return ecdsa.VerifyASN1(k, d[:], sig)
		}
	case *rsa.PublicKey:
		d := sha256.Sum256(payload)
		return rsa.VerifyPKCS1v15(k, crypto.SHA256, d[:], sig) == nil
	case ed25519.PublicKey:
		if ed25519.Verify(k, payload, sig) {
			return true
		}
		d := sha512.Sum512(payload)
		return ed25519.VerifyWithOptions(k, d[:], sig, &ed25519.Options{Hash: crypto.SHA512}) == nil
	}
	return false
}
