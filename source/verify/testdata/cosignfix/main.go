// Command cosignfix makes the cosign fixtures of stencil's source/verify
// tests: it starts go-containerregistry's registry on a fixed loopback
// address, pushes a Helm chart artifact (Helm's OCI media types) to it, has
// the real cosign binary generate a key pair, sign the artifact and verify
// it, then writes the raw manifests and blobs it finds in the registry.
//
//	go run . /path/to/cosign ../helm/signed-0.1.0.tgz ../cosign
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// addr is fixed: the signed payload names the repository, host and port.
const addr = "127.0.0.1:39517"

func main() {
	cosign, chartPath, out := os.Args[1], os.Args[2], os.Args[3]
	l, err := net.Listen("tcp", addr)
	check(err)
	go http.Serve(l, registry.New())

	repo, err := name.NewRepository(addr + "/charts/signed")
	check(err)
	tgz, err := os.ReadFile(chartPath)
	check(err)
	// Helm's layout: the config blob is the chart's metadata as JSON.
	cfg := []byte(`{"name":"signed","version":"0.1.0","description":"A chart signed by helm package --sign","apiVersion":"v2","appVersion":"1.0"}`)
	cfgLayer := static.NewLayer(cfg, "application/vnd.cncf.helm.config.v1+json")
	chartLayer := static.NewLayer(tgz, "application/vnd.cncf.helm.chart.content.v1.tar+gzip")
	check(remote.WriteLayer(repo, cfgLayer))
	check(remote.WriteLayer(repo, chartLayer))
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","digest":"%s","size":%d},`+
		`"layers":[{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"%s","size":%d}],`+
		`"annotations":{"org.opencontainers.image.title":"signed","org.opencontainers.image.version":"0.1.0"}}`,
		digestOf(cfgLayer), len(cfg), digestOf(chartLayer), len(tgz))
	img := rawManifest(manifest)
	check(remote.Put(repo.Tag("0.1.0"), img))
	d, _, err := v1.SHA256(bytes.NewReader(img))
	check(err)
	ref := repo.Digest(d.String()).String()
	log.Printf("pushed %s", ref)

	work, err := os.MkdirTemp("", "cosignfix")
	check(err)
	defer os.RemoveAll(work)
	env := append(os.Environ(), "COSIGN_PASSWORD=fixture", "COSIGN_EXPERIMENTAL=0")
	run(work, env, cosign, "version")
	run(work, env, cosign, "generate-key-pair")
	run(work, env, cosign, "sign", "--key", "cosign.key", "--tlog-upload=false", "--yes", "--allow-http-registry", ref)
	// RSA and Ed25519 keys made here, imported into cosign's format:
	// their signatures are appended to the same signature manifest.
	for _, k := range []struct {
		prefix string
		key    any
	}{{"rsa", mustRSA()}, {"ed25519", mustEd25519()}} {
		der, err := x509.MarshalPKCS8PrivateKey(k.key)
		check(err)
		check(os.WriteFile(filepath.Join(work, k.prefix+".pem"),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
		run(work, env, cosign, "import-key-pair", "--key", k.prefix+".pem", "--output-key-prefix", k.prefix, "--yes")
		run(work, env, cosign, "sign", "--key", k.prefix+".key", "--tlog-upload=false", "--yes", "--allow-http-registry", ref)
	}
	for _, pub := range []string{"cosign.pub", "rsa.pub", "ed25519.pub"} {
		// cosign v2.6.5 refuses its own Ed25519 signature (it signs
		// Ed25519ph, verifies pure Ed25519): only the others are checked.
		if pub != "ed25519.pub" {
			run(work, env, cosign, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", ref)
		}
		b, err := os.ReadFile(filepath.Join(work, pub))
		check(err)
		write(out, pub, b)
	}

	check(os.MkdirAll(out, 0o755))
	dump(out, "chart", repo, d.String())
	dump(out, "signature", repo, "sha256-"+d.Hex+".sig")
	write(out, "repository", []byte(repo.Name()+"\n"))
	write(out, "digest", []byte(d.String()+"\n"))
}

// dump writes the raw manifest at identifier and every blob it names.
func dump(out, prefix string, repo name.Repository, identifier string) {
	var ref name.Reference = repo.Tag(identifier)
	if _, err := name.NewDigest(repo.Name() + "@" + identifier); err == nil {
		ref = repo.Digest(identifier)
	}
	desc, err := remote.Get(ref)
	check(err)
	write(out, prefix+".manifest.json", desc.Manifest)
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	check(json.Unmarshal(desc.Manifest, &m))
	blobs := []string{m.Config.Digest}
	for _, l := range m.Layers {
		blobs = append(blobs, l.Digest)
	}
	for _, b := range blobs {
		layer, err := remote.Layer(repo.Digest(b))
		check(err)
		rc, err := layer.Compressed()
		check(err)
		data, err := io.ReadAll(rc)
		check(err)
		write(filepath.Join(out, "blobs"), b[len("sha256:"):], data)
	}
}

// rawManifest is an OCI image manifest pushed as these exact bytes.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error) { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) {
	return types.OCIManifestSchema1, nil
}

func digestOf(l v1.Layer) string {
	d, err := l.Digest()
	check(err)
	return d.String()
}

func mustRSA() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 3072)
	check(err)
	return k
}

func mustEd25519() ed25519.PrivateKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	check(err)
	return k
}

func write(dir, file string, data []byte) {
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, file), data, 0o644))
}

func run(dir string, env []string, cmd string, args ...string) {
	c := exec.Command(cmd, args...)
	c.Dir, c.Env = dir, env
	var buf bytes.Buffer
	c.Stdout, c.Stderr = &buf, &buf
	err := c.Run()
	fmt.Printf("$ cosign %v\n%s", args, buf.String())
	check(err)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
