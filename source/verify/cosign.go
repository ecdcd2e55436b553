package verify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The layout `cosign sign --key` writes: a manifest tagged
// sha256-<hex>.sig in the signed artifact's repository, one layer per
// signature holding the simple-signing payload, the signature in an
// annotation of the layer.
const (
	simpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	signatureAnnotation    = "dev.cosignproject.cosign/signature"
	cosignSignatureType    = "cosign container image signature"
)

// simpleSigning is the part of a simple-signing payload
// (containers-signature(5)) that a verification reads.
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// Cosign checks that the OCI artifact with manifest digest `digest`
// ("sha256:<hex>") in repository `repo` (e.g.
// "127.0.0.1:5000/charts/podinfo", no scheme) carries a cosign signature,
// as `cosign sign --key` stores it (the signature manifest at tag
// sha256-<hex>.sig in the same repository; each layer of media type
// application/vnd.dev.cosign.simplesigning.v1+json holds the payload, its
// annotation dev.cosignproject.cosign/signature the base64 signature), made
// by one of the public keys in pubKeysPEM, over a payload whose
// critical.image.docker-manifest-digest equals digest and whose
// critical.identity.docker-reference names repo. opts are the remote
// options (auth, transport) the pull used.
//
// It returns nil when one signature passes every check. Otherwise the
// error wraps ErrBadKey (pubKeysPEM does not parse), ErrUnsigned (no
// signature manifest, or one without cosign signatures) or
// ErrSignatureInvalid (none verifies, or the one that verifies signs
// another digest or repository); any other error is the registry's (not
// reachable, credentials refused) or a malformed repo or digest. What is
// read is bounded by MaxSignatureManifestSize, MaxSignatures and
// MaxPayloadSize. Signatures kept elsewhere (COSIGN_REPOSITORY, OCI
// referrers, a transparency log) are not looked up.
func Cosign(ctx context.Context, repo string, digest string, pubKeysPEM []byte, opts ...remote.Option) error {
	keys, err := parsePublicKeys(pubKeysPEM)
	if err != nil {
		return err
	}
	h, err := v1.NewHash(digest)
	if err != nil || h.Algorithm != "sha256" {
		return errors.New("verify cosign signature: digest is not sha256:<64 hex digits>")
	}
	r, err := name.NewRepository(repo)
	if err != nil {
		return fmt.Errorf("verify cosign signature: repository: %w", err)
	}
	opts = append(opts[:len(opts):len(opts)], remote.WithContext(ctx))
	m, err := fetchSignatureManifest(r, h, opts)
	if err != nil {
		return err
	}
	return checkSignatures(r, h, m, keys, opts)
}

// fetchSignatureManifest reads the manifest at the cosign tag of h: a HEAD
// gives its size, refused over MaxSignatureManifestSize before any body
// is read, and the GET is by the digest the HEAD named, so a registry
// cannot swap in another. A registry whose HEAD answers without the
// headers the distribution spec asks for (digest, length, type) is read
// with a GET by tag, which go-containerregistry caps at 100 MiB, and
// refused over the limit after it.
func fetchSignatureManifest(r name.Repository, h v1.Hash, opts []remote.Option) (*v1.Manifest, error) {
	tag := r.Tag(fmt.Sprintf("%s-%s.sig", h.Algorithm, h.Hex))
	var ref name.Reference = tag
	head, err := remote.Head(tag, opts...)
	var terr *transport.Error
	switch {
	case isNotFound(err):
		return nil, fmt.Errorf("%w: no cosign signature manifest at tag %s", ErrUnsigned, tag.TagStr())
	case err != nil && (errors.As(err, &terr) || isContextError(err)):
		return nil, fmt.Errorf("look up cosign signature %s: %w", tag, err)
	case err != nil:
		// An answer without the headers: GET by tag.
	case head.Size > MaxSignatureManifestSize:
		return nil, fmt.Errorf("%w: cosign signature manifest %s is %d bytes, over the limit of %d",
			ErrSignatureInvalid, tag.TagStr(), head.Size, MaxSignatureManifestSize)
	default:
		ref = r.Digest(head.Digest.String())
	}
	desc, err := remote.Get(ref, opts...)
	if isNotFound(err) {
		return nil, fmt.Errorf("%w: no cosign signature manifest at tag %s", ErrUnsigned, tag.TagStr())
	}
	if err != nil {
		return nil, fmt.Errorf("pull cosign signature %s: %w", tag, err)
	}
	if len(desc.Manifest) > MaxSignatureManifestSize {
		return nil, fmt.Errorf("%w: cosign signature manifest %s is over the limit of %d bytes",
			ErrSignatureInvalid, tag.TagStr(), MaxSignatureManifestSize)
	}
	if desc.MediaType != types.OCIManifestSchema1 && desc.MediaType != types.DockerManifestSchema2 {
		return nil, fmt.Errorf("%w: cosign signature %s is not an image manifest", ErrSignatureInvalid, tag.TagStr())
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("%w: cosign signature manifest %s does not parse", ErrSignatureInvalid, tag.TagStr())
	}
	return m, nil
}

// isContextError reports whether err is a cancelled or expired context's.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// checkSignatures looks for one signature layer of m (among its first
// MaxSignatures) that one of keys verifies and whose payload names h in
// r. A payload is trusted only after its signature verified.
func checkSignatures(r name.Repository, h v1.Hash, m *v1.Manifest, keys []crypto.PublicKey, opts []remote.Option) error {
	var tried, skipped, malformed int
	var claimErr error
	for _, l := range m.Layers {
		if l.MediaType != simpleSigningMediaType {
			continue
		}
		if tried == MaxSignatures {
			skipped++
			continue
		}
		tried++
		sig, ok := decodeSignature(l)
		if !ok || l.Size < 0 || l.Size > MaxPayloadSize || l.Digest.Algorithm != "sha256" {
			malformed++
			continue
		}
		payload, err := fetchPayload(r, l, opts)
		if err != nil {
			return err
		}
		if !verifiesAny(keys, payload, sig) {
			continue
		}
		if err := checkClaims(r, h, payload); err != nil {
			claimErr = err
			continue
		}
		return nil
	}
	switch {
	case claimErr != nil:
		return claimErr
	case tried == 0:
		return fmt.Errorf("%w: the cosign signature manifest of %s holds no signature", ErrUnsigned, h)
	case skipped > 0:
		return fmt.Errorf("%w: none of the first %d cosign signatures verifies with the given keys (%d more not checked)",
			ErrSignatureInvalid, tried, skipped)
	case malformed > 0:
		return fmt.Errorf("%w: none of the %d cosign signatures verifies with the given keys (%d malformed or over %d bytes)",
			ErrSignatureInvalid, tried, malformed, MaxPayloadSize)
	}
	return fmt.Errorf("%w: none of the %d cosign signatures verifies with the given keys", ErrSignatureInvalid, tried)
}

// decodeSignature returns the signature of a layer, if its annotation
// holds base64 of at most maxSignatureSize bytes.
func decodeSignature(l v1.Descriptor) ([]byte, bool) {
	s, ok := l.Annotations[signatureAnnotation]
	if !ok || base64.StdEncoding.DecodedLen(len(s)) > maxSignatureSize+2 {
		return nil, false
	}
	sig, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(sig) == 0 || len(sig) > maxSignatureSize {
		return nil, false
	}
	return sig, true
}

// fetchPayload reads the payload blob of l, at most l.Size (itself at most
// MaxPayloadSize) bytes, and checks it against l's digest.
func fetchPayload(r name.Repository, l v1.Descriptor, opts []remote.Option) ([]byte, error) {
	ref := r.Digest(l.Digest.String())
	layer, err := remote.Layer(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("pull cosign payload %s: %w", l.Digest, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, fmt.Errorf("pull cosign payload %s: %w", l.Digest, err)
	}
	// Read only: what the read got is checked; Close adds nothing.
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(io.LimitReader(rc, l.Size+1))
	if err != nil {
		return nil, fmt.Errorf("pull cosign payload %s: %w", l.Digest, err)
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != l.Size || hex.EncodeToString(sum[:]) != l.Digest.Hex {
		return nil, fmt.Errorf("%w: cosign payload %s does not match its descriptor", ErrSignatureInvalid, l.Digest)
	}
	return b, nil
}

func verifiesAny(keys []crypto.PublicKey, payload, sig []byte) bool {
	for _, k := range keys {
		if verifies(k, payload, sig) {
			return true
		}
	}
	return false
}

// checkClaims checks what a verified payload signs: a cosign signature of
// manifest digest h in repository r. The repository is compared by its
// normalized name (docker.io/x and index.docker.io/library/x are one);
// a tag in docker-reference is ignored, the digest is what is signed.
func checkClaims(r name.Repository, h v1.Hash, payload []byte) error {
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("%w: signed cosign payload is not JSON", ErrSignatureInvalid)
	}
	if p.Critical.Type != cosignSignatureType {
		return fmt.Errorf("%w: signed payload is not a cosign container image signature", ErrSignatureInvalid)
	}
	if p.Critical.Image.DockerManifestDigest != h.String() {
		return fmt.Errorf("%w: signed payload names another manifest digest than %s", ErrSignatureInvalid, h)
	}
	ref, err := name.ParseReference(p.Critical.Identity.DockerReference)
	if err != nil || ref.Context().Name() != r.Name() {
		return fmt.Errorf("%w: signed payload names another repository than %s", ErrSignatureInvalid, r)
	}
	return nil
}

// isNotFound reports whether err is a registry's 404 (or its
// MANIFEST_UNKNOWN / NAME_UNKNOWN code under another status).
func isNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}
