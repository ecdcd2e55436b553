package verify

import "errors"

// The errors a verification returns wrap one of these, so a caller tells
// them apart with errors.Is and turns each into a condition reason. Any
// other error (a registry that cannot be reached, refused credentials, a
// malformed argument) is not a verdict on the signature: a caller retries it
// or reports it as a failed pull.
var (
	// ErrUnsigned means no signature was found: no signature manifest at
	// the cosign tag, one that holds no cosign signature, or an empty
	// provenance file. Reason `Unsigned`.
	ErrUnsigned = errors.New("chart is not signed")

	// ErrSignatureInvalid means a signature was found and refused: it does
	// not verify with any of the given keys, or what it signs names another
	// digest, repository or archive, or the signature data is malformed or
	// over a limit. Reason `SignatureInvalid`.
	ErrSignatureInvalid = errors.New("chart signature is invalid")

	// ErrBadKey means the key material the admin gave does not parse (or
	// is of a kind or size this package refuses). Its message never quotes
	// the key material. Reason `InvalidKey`.
	ErrBadKey = errors.New("verification key is invalid")
)

// Limits on what a verification reads from a registry or accepts from a
// caller. Each keeps a hostile registry or file from making the controller
// read or verify without bound.
const (
	// MaxSignatureManifestSize bounds the cosign signature manifest (the
	// sha256-<hex>.sig tag), in bytes. A manifest with MaxSignatures
	// signature layers is under 32 KiB.
	MaxSignatureManifestSize = 256 << 10

	// MaxSignatures is how many cosign signature layers of one signature
	// manifest are checked at most; layers after it are not read.
	MaxSignatures = 32

	// MaxPayloadSize bounds one cosign simple-signing payload blob, in
	// bytes. cosign writes a few hundred bytes (more with -a annotations).
	MaxPayloadSize = 64 << 10

	// MaxProvenanceSize bounds a Helm provenance file, in bytes. Helm's
	// hold the chart's Chart.yaml and one digest: a few KiB.
	MaxProvenanceSize = 1 << 20

	// MaxKeys bounds how many public keys (PEM blocks) or OpenPGP entities
	// one Secret may hold.
	MaxKeys = 64

	// maxSignatureSize bounds one decoded cosign signature: an RSA-8192
	// signature is 1 KiB, an ECDSA P-521 one under 140 bytes.
	maxSignatureSize = 2 << 10
)
