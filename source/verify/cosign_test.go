package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is an in-process OCI registry that counts the blob reads
// it serves.
type testRegistry struct {
	host      string
	blobReads atomic.Int64
	// noHeadDigest: answer a manifest HEAD without Docker-Content-Digest,
	// as a registry that does not follow the distribution spec.
	noHeadDigest atomic.Bool
}

// stripDigest drops Docker-Content-Digest from a response.
type stripDigest struct{ http.ResponseWriter }

func (s stripDigest) WriteHeader(code int) {
	s.Header().Del("Docker-Content-Digest")
	s.ResponseWriter.WriteHeader(code)
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	tr := &testRegistry{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			tr.blobReads.Add(1)
		}
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") && tr.noHeadDigest.Load() {
			w = stripDigest{w}
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr.host = u.Host
	return tr
}

func (tr *testRegistry) repo(t *testing.T, path string) name.Repository {
	t.Helper()
	r, err := name.NewRepository(tr.host + "/" + path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pushChart pushes a Helm chart artifact (Helm's media types) and returns
// its manifest digest.
func pushChart(t *testing.T, repo name.Repository, content string) v1.Hash {
	t.Helper()
	return pushChartWith(t, repo, content, nil)
}

// pushChartWith is pushChart with remote options.
func pushChartWith(t *testing.T, repo name.Repository, content string, opts []remote.Option) v1.Hash {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		"application/vnd.cncf.helm.config.v1+json")
	img, err := mutate.Append(img, mutate.Addendum{
		Layer: static.NewLayer([]byte(content), "application/vnd.cncf.helm.chart.content.v1.tar+gzip"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(repo.Tag("1.0.0"), img, opts...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// cosignPayload is the simple-signing payload cosign signs.
func cosignPayload(t *testing.T, dockerReference, digest string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": dockerReference},
			"image":    map[string]string{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sigLayer is one signature of a cosign signature manifest.
type sigLayer struct {
	payload []byte
	sig     []byte
	extra   map[string]string // more annotations
}

// pushSignatures writes the cosign signature manifest of digest to repo,
// as cosign lays it out.
func pushSignatures(t *testing.T, repo name.Repository, digest v1.Hash, layers ...sigLayer) {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1),
		"application/vnd.oci.image.config.v1+json")
	for _, l := range layers {
		ann := map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(l.sig)}
		for k, v := range l.extra {
			ann[k] = v
		}
		var err error
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:       static.NewLayer(l.payload, simpleSigningMediaType),
			Annotations: ann,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := remote.Write(repo.Tag(digest.Algorithm+"-"+digest.Hex+".sig"), img); err != nil {
		t.Fatal(err)
	}
}

// testKey is a signing key and its public key as cosign.pub holds it.
type testKey struct {
	sign func(payload []byte) []byte
	pem  []byte
}

func pemOf(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// newECDSAKey makes a P-256 key, cosign's default: ASN.1 ECDSA over the
// SHA-256 of the payload.
// mustDER returns the DER bytes of the first PEM block of p.
func mustDER(t *testing.T, p []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

func newECDSAKey(t *testing.T) testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{pem: pemOf(t, &k.PublicKey), sign: func(p []byte) []byte {
		d := sha256.Sum256(p)
		s, err := ecdsa.SignASN1(rand.Reader, k, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
}

func newRSAKey(t *testing.T) testKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{pem: pemOf(t, &k.PublicKey), sign: func(p []byte) []byte {
		d := sha256.Sum256(p)
		s, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}}
}

func newEd25519Key(t *testing.T) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{pem: pemOf(t, pub), sign: func(p []byte) []byte { return ed25519.Sign(priv, p) }}
}

func TestCosign(t *testing.T) {
	tr := newRegistry(t)
	signer, other := newECDSAKey(t), newECDSAKey(t)
	rsaKey, edKey := newRSAKey(t), newEd25519Key(t)

	// signed pushes a chart to its own repository and signs it as cosign
	// would with key; it returns the repository and the chart's digest.
	type setup func(t *testing.T, repo name.Repository, d v1.Hash)
	signWith := func(k testKey) setup {
		return func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), d.String())
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: k.sign(p)})
		}
	}
	bundle := func(keys ...testKey) []byte {
		var b []byte
		for _, k := range keys {
			b = append(b, k.pem...)
		}
		return b
	}

	tests := []struct {
		name  string
		setup setup
		keys  []byte
		want  error // nil: verifies
	}{
		// Signatures that verify.
		{"ECDSA P-256 signature by the key", signWith(signer), signer.pem, nil},
		{"RSA signature by the key", signWith(rsaKey), rsaKey.pem, nil},
		{"Ed25519 signature by the key", signWith(edKey), edKey.pem, nil},
		{"signer is the second of several keys", signWith(signer), bundle(other, rsaKey, signer), nil},
		{"docker-reference with a tag names the repository", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Tag("1.0.0").String(), d.String())
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, nil},
		{"a valid signature after a foreign one", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), d.String())
			pushSignatures(t, repo, d,
				sigLayer{payload: p, sig: other.sign(p)},
				sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, nil},

		// No signature.
		{"no signature tag", func(*testing.T, name.Repository, v1.Hash) {}, signer.pem, ErrUnsigned},
		{"signature manifest without signature layers", func(t *testing.T, repo name.Repository, d v1.Hash) {
			pushSignatures(t, repo, d)
		}, signer.pem, ErrUnsigned},

		// Signatures refused.
		{"signed by another key", signWith(other), signer.pem, ErrSignatureInvalid},
		{"ECDSA signature checked against an RSA key", signWith(signer), rsaKey.pem, ErrSignatureInvalid},
		{"payload names another digest", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), "sha256:"+strings.Repeat("ab", 32))
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, ErrSignatureInvalid},
		{"signature made for another repository", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Registry.Name()+"/charts/other", d.String())
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, ErrSignatureInvalid},
		{"signature of other bytes than the payload", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), d.String())
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(append(p, ' '))})
		}, signer.pem, ErrSignatureInvalid},
		{"signed payload of another type", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := []byte(strings.Replace(string(cosignPayload(t, repo.Name(), d.String())),
				"cosign container image signature", "atomic container signature", 1))
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, ErrSignatureInvalid},
		{"signature annotation is not base64", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), d.String())
			img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
			img, err := mutate.Append(img, mutate.Addendum{
				Layer:       static.NewLayer(p, simpleSigningMediaType),
				Annotations: map[string]string{signatureAnnotation: "%%%"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := remote.Write(repo.Tag("sha256-"+d.Hex+".sig"), img); err != nil {
				t.Fatal(err)
			}
		}, signer.pem, ErrSignatureInvalid},
		{"signed payload over the size limit", func(t *testing.T, repo name.Repository, d v1.Hash) {
			var m map[string]any
			if err := json.Unmarshal(cosignPayload(t, repo.Name(), d.String()), &m); err != nil {
				t.Fatal(err)
			}
			m["optional"] = map[string]string{"pad": strings.Repeat("x", MaxPayloadSize)}
			p, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p)})
		}, signer.pem, ErrSignatureInvalid},
		{"signature manifest over the size limit", func(t *testing.T, repo name.Repository, d v1.Hash) {
			p := cosignPayload(t, repo.Name(), d.String())
			pushSignatures(t, repo, d, sigLayer{payload: p, sig: signer.sign(p),
				extra: map[string]string{"pad": strings.Repeat("x", MaxSignatureManifestSize)}})
		}, signer.pem, ErrSignatureInvalid},

		// Key material that does not parse.
		{"cosign.pub is not PEM", signWith(signer), []byte("not a key"), ErrBadKey},
		{"cosign.pub is empty", signWith(signer), nil, ErrBadKey},
		{"cosign.pub has text after its key", signWith(signer), append(signer.pem[:len(signer.pem):len(signer.pem)], "garbage"...), ErrBadKey},
		{"cosign.pub holds a private key", signWith(signer), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("secret-bytes")}), ErrBadKey},
		{"PKIX key in a block of another type", signWith(signer), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mustDER(t, signer.pem)}), ErrBadKey},
		{"PUBLIC KEY block that is not PKIX", signWith(signer), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("secret-bytes")}), ErrBadKey},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := tr.repo(t, "charts/c"+string(rune('a'+i)))
			d := pushChart(t, repo, "chart "+tt.name)
			tt.setup(t, repo, d)
			err := Cosign(t.Context(), repo.Name(), d.String(), tt.keys)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Cosign: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Cosign: %v, want %v", err, tt.want)
			}
			for _, s := range []string{"secret-bytes", "c2VjcmV0", "BEGIN", "garbage"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes key material %q", err, s)
				}
			}
		})
	}
}

// TestCosignReadsAtMostMaxSignatures: a signature manifest with more
// layers than MaxSignatures makes at most MaxSignatures payload reads, and
// a valid signature past the limit is not looked at.
func TestCosignReadsAtMostMaxSignatures(t *testing.T) {
	tr := newRegistry(t)
	signer, other := newECDSAKey(t), newECDSAKey(t)
	repo := tr.repo(t, "charts/many")
	d := pushChart(t, repo, "many")
	var layers []sigLayer
	for i := 0; i < MaxSignatures+8; i++ {
		// Distinct payloads, so each is its own blob.
		p := cosignPayload(t, repo.Tag("v"+string(rune('a'+i%26))+string(rune('a'+i/26))).String(), d.String())
		layers = append(layers, sigLayer{payload: p, sig: other.sign(p)})
	}
	p := cosignPayload(t, repo.Name(), d.String())
	layers = append(layers, sigLayer{payload: p, sig: signer.sign(p)})
	pushSignatures(t, repo, d, layers...)

	before := tr.blobReads.Load()
	err := Cosign(t.Context(), repo.Name(), d.String(), signer.pem)
	if !errors.Is(err, ErrSignatureInvalid) {
		t.Fatalf("Cosign: %v, want ErrSignatureInvalid", err)
	}
	if !strings.Contains(err.Error(), "not checked") {
		t.Errorf("error %q does not say signatures were left unchecked", err)
	}
	if n := tr.blobReads.Load() - before; n > MaxSignatures {
		t.Errorf("read %d payload blobs, want at most %d", n, MaxSignatures)
	}
}

// TestCosignHeadWithoutDigest: a registry whose HEAD answers without the
// digest header is read with a GET, and the manifest size limit still
// holds.
func TestCosignHeadWithoutDigest(t *testing.T) {
	tr := newRegistry(t)
	signer := newECDSAKey(t)

	ok := tr.repo(t, "charts/ok")
	d := pushChart(t, ok, "ok")
	p := cosignPayload(t, ok.Name(), d.String())
	pushSignatures(t, ok, d, sigLayer{payload: p, sig: signer.sign(p)})

	big := tr.repo(t, "charts/big")
	bd := pushChart(t, big, "big")
	bp := cosignPayload(t, big.Name(), bd.String())
	pushSignatures(t, big, bd, sigLayer{payload: bp, sig: signer.sign(bp),
		extra: map[string]string{"pad": strings.Repeat("x", MaxSignatureManifestSize)}})

	tr.noHeadDigest.Store(true)
	if err := Cosign(t.Context(), ok.Name(), d.String(), signer.pem); err != nil {
		t.Errorf("Cosign: %v, want nil", err)
	}
	if err := Cosign(t.Context(), big.Name(), bd.String(), signer.pem); !errors.Is(err, ErrSignatureInvalid) {
		t.Errorf("Cosign of a manifest over the limit: %v, want ErrSignatureInvalid", err)
	}
	if err := Cosign(t.Context(), ok.Name(), bd.String(), signer.pem); !errors.Is(err, ErrUnsigned) {
		t.Errorf("Cosign of an unsigned digest: %v, want ErrUnsigned", err)
	}
}

// TestCosignRegistryErrors: a registry that cannot be reached or refuses
// the request is not a verdict on the signature.
func TestCosignRegistryErrors(t *testing.T) {
	key := newECDSAKey(t)
	digest := "sha256:" + strings.Repeat("0", 64)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	forbidden := strings.TrimPrefix(srv.URL, "http://")

	closed := httptest.NewServer(http.NotFoundHandler())
	unreachable := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()

	for _, host := range []string{forbidden, unreachable} {
		err := Cosign(t.Context(), host+"/charts/x", digest, key.pem)
		if err == nil || errors.Is(err, ErrUnsigned) || errors.Is(err, ErrSignatureInvalid) || errors.Is(err, ErrBadKey) {
			t.Errorf("Cosign against %s: %v, want a registry error", host, err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Cosign(ctx, forbidden+"/charts/x", digest, key.pem); !errors.Is(err, context.Canceled) {
		t.Errorf("Cosign with a cancelled context: %v, want context.Canceled", err)
	}
}

// TestCosignArguments: malformed arguments are refused before any request.
func TestCosignArguments(t *testing.T) {
	key := newECDSAKey(t)
	for _, tc := range []struct{ repo, digest string }{
		{"127.0.0.1:1/charts/x", "sha256:abc"},
		{"127.0.0.1:1/charts/x", "sha512:" + strings.Repeat("0", 128)},
		{"127.0.0.1:1/charts/x", strings.Repeat("0", 64)},
		{"127.0.0.1:1/Charts/UPPER", "sha256:" + strings.Repeat("0", 64)},
	} {
		err := Cosign(t.Context(), tc.repo, tc.digest, key.pem)
		if err == nil || errors.Is(err, ErrUnsigned) || errors.Is(err, ErrSignatureInvalid) {
			t.Errorf("Cosign(%q, %q): %v, want an argument error", tc.repo, tc.digest, err)
		}
	}
}
