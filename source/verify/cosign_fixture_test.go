package verify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// rawManifest is a manifest pushed as these exact bytes, so its digest is
// the one a fixture was signed for.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }

func (m rawManifest) MediaType() (types.MediaType, error) {
	var mt struct {
		MediaType types.MediaType `json:"mediaType"`
	}
	if err := json.Unmarshal(m, &mt); err != nil {
		return "", err
	}
	return mt.MediaType, nil
}

// TestCosignFixture replays into an in-process registry an artifact and
// the signature that the real cosign CLI made for it (`cosign sign --key`;
// see testdata/README.md), so the check agrees with cosign's layout and
// signing, not only with this package's reading of them. The payload
// names the registry address it was signed at, so the registry is reached
// through a transport that dials the test server whatever the host: the
// caller's remote options are what Cosign uses.
func TestCosignFixture(t *testing.T) {
	repoName := strings.TrimSpace(string(readFixture(t, "cosign", "repository")))
	digest := strings.TrimSpace(string(readFixture(t, "cosign", "digest")))

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	srvAddr := strings.TrimPrefix(srv.URL, "http://")
	dialer := &net.Dialer{}
	opts := []remote.Option{remote.WithTransport(&http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, srvAddr)
		},
	})}

	repo, err := name.NewRepository(repoName)
	if err != nil {
		t.Fatal(err)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := os.ReadDir(filepath.Join("testdata", "cosign", "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	push := func(repo name.Repository, sigTag string) {
		t.Helper()
		for _, b := range blobs {
			layer := static.NewLayer(readFixture(t, "cosign", "blobs", b.Name()), types.OCILayer)
			if err := remote.WriteLayer(repo, layer, opts...); err != nil {
				t.Fatal(err)
			}
		}
		if err := remote.Put(repo.Digest(digest), rawManifest(readFixture(t, "cosign", "chart.manifest.json")), opts...); err != nil {
			t.Fatal(err)
		}
		if err := remote.Put(repo.Tag(sigTag), rawManifest(readFixture(t, "cosign", "signature.manifest.json")), opts...); err != nil {
			t.Fatal(err)
		}
	}
	push(repo, "sha256-"+h.Hex+".sig")

	// cosign signed with a key it generated (ECDSA P-256) and with
	// imported RSA-3072 and Ed25519 keys; each verifies on its own. (The
	// Ed25519 signature is Ed25519ph, which cosign v2.6.5's own verify
	// refuses: see testdata/README.md.)
	for _, key := range []string{"cosign.pub", "rsa.pub", "ed25519.pub"} {
		if err := Cosign(t.Context(), repoName, digest, readFixture(t, "cosign", key), opts...); err != nil {
			t.Errorf("Cosign of the cosign-signed fixture with %s: %v, want nil", key, err)
		}
	}
	pub := readFixture(t, "cosign", "cosign.pub")
	if err := Cosign(t.Context(), repoName, digest, newECDSAKey(t).pem, opts...); !errors.Is(err, ErrSignatureInvalid) {
		t.Errorf("Cosign with another key: %v, want ErrSignatureInvalid", err)
	}

	// The same artifact and signature copied to another repository: the
	// payload names the one it was signed in.
	copied, err := name.NewRepository(repo.Registry.Name() + "/charts/copied")
	if err != nil {
		t.Fatal(err)
	}
	push(copied, "sha256-"+h.Hex+".sig")
	if err := Cosign(t.Context(), copied.Name(), digest, pub, opts...); !errors.Is(err, ErrSignatureInvalid) {
		t.Errorf("Cosign of the signature copied to another repository: %v, want ErrSignatureInvalid", err)
	}

	// The signature put at the tag of another artifact's digest: the
	// payload names the digest it was signed for.
	otherRepo, err := name.NewRepository(repo.Registry.Name() + "/charts/other")
	if err != nil {
		t.Fatal(err)
	}
	other := pushChartWith(t, otherRepo, "another chart", opts)
	push(otherRepo, "sha256-"+other.Hex+".sig")
	if err := Cosign(t.Context(), otherRepo.Name(), other.String(), pub, opts...); !errors.Is(err, ErrSignatureInvalid) {
		t.Errorf("Cosign of another digest carrying the fixture's signature: %v, want ErrSignatureInvalid", err)
	}
}
