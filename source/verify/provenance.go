package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"sigs.k8s.io/yaml"
)

// provenanceSeparator ends the Chart.yaml part of a provenance message and
// starts its digests: Helm writes YAML's document end marker, since a
// "---" line cannot stand in a clear-signed message.
var provenanceSeparator = []byte("\n...\n")

// provenanceSums is the second part of a provenance message: the digest
// ("sha256:<hex>") of each archive by file name.
type provenanceSums struct {
	Files map[string]string `json:"files"`
}

// Provenance checks a Helm provenance file (as `helm package --sign` writes
// it: an OpenPGP clear-signed document holding the Chart.yaml and a `files:`
// map of archive name to sha256:<hex>) for the chart archive: signed by a key
// in keyring (armored or binary), and the sha256 it names for archiveName
// equals the archive's.
//
// Only the clear-signed text is read, and only after its signature verified
// (text around the signed block is ignored, as Helm ignores it). The error
// wraps ErrBadKey (keyring does not parse or holds no key), ErrUnsigned
// (prov is empty) or ErrSignatureInvalid (no signed block, a signature no
// key of keyring verifies or an expired one, no digest for archiveName, a
// digest other than the archive's, prov over MaxProvenanceSize).
func Provenance(archive []byte, archiveName string, prov []byte, keyring []byte) error {
	ring, err := readKeyring(keyring)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(prov)) == 0 {
		return fmt.Errorf("%w: no provenance file for %s", ErrUnsigned, archiveName)
	}
	if len(prov) > MaxProvenanceSize {
		return fmt.Errorf("%w: provenance file of %s is %d bytes, over the limit of %d",
			ErrSignatureInvalid, archiveName, len(prov), MaxProvenanceSize)
	}
	block, _ := clearsign.Decode(prov)
	if block == nil {
		return fmt.Errorf("%w: provenance file of %s holds no OpenPGP clear-signed message", ErrSignatureInvalid, archiveName)
	}
	if _, err := block.VerifySignature(ring, nil); err != nil {
		return fmt.Errorf("%w: provenance file of %s: signature does not verify with the keyring: %w",
			ErrSignatureInvalid, archiveName, err)
	}
	want, err := signedDigest(block.Plaintext, archiveName)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(archive)
	if want != "sha256:"+hex.EncodeToString(sum[:]) {
		return fmt.Errorf("%w: the sha256 of %s differs from the one its provenance file signs", ErrSignatureInvalid, archiveName)
	}
	return nil
}

// signedDigest returns the digest a verified provenance message names for
// archiveName, reading it as Helm does: the part after the first
// separator is a YAML map whose files: name each archive's digest.
func signedDigest(msg []byte, archiveName string) (string, error) {
	parts := bytes.Split(msg, provenanceSeparator)
	if len(parts) < 2 {
		return "", fmt.Errorf("%w: provenance of %s has no files: part after its Chart.yaml", ErrSignatureInvalid, archiveName)
	}
	var sums provenanceSums
	if err := yaml.Unmarshal(parts[1], &sums); err != nil {
		return "", fmt.Errorf("%w: the files: part of the provenance of %s does not parse", ErrSignatureInvalid, archiveName)
	}
	want, ok := sums.Files[archiveName]
	if !ok {
		return "", fmt.Errorf("%w: provenance file names no digest for %s", ErrSignatureInvalid, archiveName)
	}
	return want, nil
}

// readKeyring reads an OpenPGP keyring as `gpg --export` writes it, binary
// or armored (`--armor`; several armored blocks one after another, as
// `cat a.asc b.asc` makes, are all read). A GnuPG keybox (pubring.kbx) is
// refused with a hint. Errors never quote the key material.
func readKeyring(data []byte) (openpgp.EntityList, error) {
	trimmed := bytes.TrimSpace(data)
	var ring openpgp.EntityList
	var err error
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("%w: keyring is empty", ErrBadKey)
	case len(data) >= 12 && string(data[8:12]) == "KBXf":
		return nil, fmt.Errorf("%w: keyring is a GnuPG keybox; give the keys as `gpg --export` writes them", ErrBadKey)
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN PGP")):
		ring, err = readArmoredKeyring(trimmed)
	default:
		ring, err = openpgp.ReadKeyRing(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: keyring does not parse as an OpenPGP keyring", ErrBadKey)
	}
	if len(ring) == 0 {
		return nil, fmt.Errorf("%w: keyring holds no key", ErrBadKey)
	}
	if len(ring) > MaxKeys {
		return nil, fmt.Errorf("%w: keyring holds more than %d keys", ErrBadKey, MaxKeys)
	}
	return ring, nil
}

// readArmoredKeyring reads every armored key block of data. Each block is
// decoded from its own slice: the armor decoder buffers ahead and would
// swallow the start of the next block.
func readArmoredKeyring(data []byte) (openpgp.EntityList, error) {
	var ring openpgp.EntityList
	for _, chunk := range armoredChunks(data) {
		block, err := armor.Decode(bytes.NewReader(chunk))
		if err != nil {
			return nil, err
		}
		if block.Type != openpgp.PublicKeyType && block.Type != openpgp.PrivateKeyType {
			return nil, errors.New("armored block is not a key block")
		}
		el, err := openpgp.ReadKeyRing(block.Body)
		if err != nil {
			return nil, err
		}
		ring = append(ring, el...)
	}
	return ring, nil
}

// armoredChunks splits data before each armor header line.
func armoredChunks(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	begin := []byte("-----BEGIN PGP ")
	var chunks [][]byte
	for {
		i := bytes.Index(data[1:], begin)
		if i < 0 {
			return append(chunks, data)
		}
		chunks = append(chunks, data[:i+1])
		data = data[i+1:]
	}
}
