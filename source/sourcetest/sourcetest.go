// Package sourcetest starts real servers for tests of charts from
// registries: an OCI registry (go-containerregistry's in-process
// registry) and a Helm chart repository (index.yaml and archives), each
// behind an httptest TLS server, optionally behind basic auth, and builds
// chart archives, hostile ones included; it signs charts as cosign
// (Registry.Sign with a CosignKey) and `helm package --sign` (a PGPKey's
// Provenance, Repo.AddSigned) do. Either server can answer as a hostile
// one would (Answer: any status, reason phrase and body; Redirect) and
// tells what it heard (Requests, Authorizations). It is for tests only.
package sourcetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// Helm's media types (as package source has them).
const (
	mediaTypeConfig = "application/vnd.cncf.helm.config.v1+json"
	mediaTypeChart  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Entry is one entry of an archive TarGz builds.
type Entry struct {
	Name string
	Body string
	// Type is the tar type flag; a regular file when 0.
	Type byte
	// Link is a link's target.
	Link string
}

// TarGz builds a gzipped tar of entries, in order.
func TarGz(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Body)), Typeflag: e.Type, Linkname: e.Link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Chart builds the archive of chart name at version, as `helm package`
// does: every file under name/, a Chart.yaml unless files has one.
func Chart(t testing.TB, name, version string, files map[string]string) []byte {
	t.Helper()
	all := map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n"}
	for p, c := range files {
		all[p] = c
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	entries := make([]Entry, len(paths))
	for i, p := range paths {
		entries[i] = Entry{Name: path.Join(name, p), Body: all[p]}
	}
	return TarGz(t, entries...)
}

// server is an httptest TLS server with optional basic auth.
type server struct {
	*httptest.Server
	// Host is the server's host:port.
	Host string
	// CA is the PEM of the server's certificate, for Credentials.CA.
	CA []byte
	*answers
}

// answers are the raw answers a server gives in place of its own, by
// path prefix, and the Authorization headers it received.
type answers struct {
	mu       sync.Mutex
	byPath   map[string]answer
	auth     []string
	requests int
}

type answer struct {
	status       int
	reason, body string
	location     string
}

// Answer makes the server answer every request whose path starts with
// prefix with status, the reason phrase reason (Go's text for status when
// empty) and body, written as raw HTTP/1.1, as a hostile server would.
func (a *answers) Answer(prefix string, status int, reason, body string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byPath[prefix] = answer{status: status, reason: reason, body: body}
}

// Redirect makes the server redirect every request whose path starts
// with prefix to location (302 Found).
func (a *answers) Redirect(prefix, location string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.byPath[prefix] = answer{status: http.StatusFound, location: location}
}

// Authorizations are the Authorization headers the server received, in
// order (empty ones left out).
func (a *answers) Authorizations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auth...)
}

// Requests is how many requests the server received.
func (a *answers) Requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// serve answers r from byPath, if a prefix matches, and records its
// Authorization header; it reports whether it answered.
func (a *answers) serve(w http.ResponseWriter, r *http.Request) bool {
	a.mu.Lock()
	a.requests++
	if h := r.Header.Get("Authorization"); h != "" {
		a.auth = append(a.auth, h)
	}
	var ans answer
	found := false
	for p, v := range a.byPath {
		if strings.HasPrefix(r.URL.Path, p) {
			ans, found = v, true
			break
		}
	}
	a.mu.Unlock()
	switch {
	case !found:
		return false
	case ans.location != "":
		http.Redirect(w, r, ans.location, ans.status)
		return true
	}
	reason := ans.reason
	if reason == "" {
		reason = http.StatusText(ans.status)
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, ans.body, ans.status)
		return true
	}
	// The answer goes to the client under test: a write or close that
	// fails shows there, as the error the test looks at.
	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", ans.status, reason, len(ans.body), ans.body)
	_ = buf.Flush()
	return true
}

func start(t testing.TB, h http.Handler, user, pass string) server {
	t.Helper()
	a := &answers{byPath: map[string]answer{}}
	if user != "" {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		})
	}
	inner := h
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.serve(w, r) {
			inner.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return server{Server: s, Host: strings.TrimPrefix(s.URL, "https://"),
		CA: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), answers: a}
}

// Registry is an OCI registry.
type Registry struct {
	server
	user, pass string
	token      string // the bearer token of a NewTokenRegistry
	mu         sync.Mutex
	tampered   map[string][]byte // blob digest to what is served instead
}

// NewRegistry starts an OCI registry; with a user, it asks for basic auth.
func NewRegistry(t testing.TB, user, pass string) *Registry {
	r := &Registry{user: user, pass: pass, tampered: map[string][]byte{}}
	r.server = start(t, r.handler(nil), user, pass)
	return r
}

// NewPlainRegistry starts an OCI registry served over plain http on
// loopback, as an author's local registry (`stencil render --plain-http`).
func NewPlainRegistry(t testing.TB) *Registry {
	r := &Registry{tampered: map[string][]byte{}}
	s := httptest.NewServer(r.handler(nil))
	t.Cleanup(s.Close)
	r.server = server{Server: s, Host: strings.TrimPrefix(s.URL, "http://"), answers: &answers{byPath: map[string]answer{}}}
	return r
}

// NewTokenRegistry starts an OCI registry that asks for a bearer token
// from the token server ts (the distribution spec's token
// authentication, as Docker Hub, GHCR or Harbor do), and accepts only
// the token ts gives.
func NewTokenRegistry(t testing.TB, ts *TokenServer) *Registry {
	r := &Registry{token: ts.token, tampered: map[string][]byte{}}
	challenge := `Bearer realm="https://` + ts.Host + `/token",service="stencil-test"`
	r.server = start(t, r.handler(func(w http.ResponseWriter, req *http.Request) bool {
		if req.Header.Get("Authorization") == "Bearer "+ts.token {
			return true
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return false
	}), "", "")
	return r
}

// handler serves the registry, its tampered blobs first, to the requests
// allow (when not nil) lets through.
func (r *Registry) handler(allow func(http.ResponseWriter, *http.Request) bool) http.Handler {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if allow != nil && !allow(w, req) {
			return
		}
		r.mu.Lock()
		body, ok := r.tampered[path.Base(req.URL.Path)]
		r.mu.Unlock()
		if ok && strings.Contains(req.URL.Path, "/blobs/") && req.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(body)
			return
		}
		reg.ServeHTTP(w, req)
	})
}

// TokenServer is a registry's token server: for the basic credentials it
// was started with, it gives a bearer token (at /token). It is reached
// by the name localhost (its Host, URL), with a certificate of its own
// (CA): go-containerregistry refuses a token server at a private address
// literal other than the registry's own.
type TokenServer struct {
	server
	token string
}

// NewTokenServer starts a token server that gives a token for user and
// pass, on a host (a port) of its own.
func NewTokenServer(t testing.TB, user, pass string) *TokenServer {
	ts := &TokenServer{token: "token-for-" + user}
	a := &answers{byPath: map[string]answer{}}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if a.serve(w, req) {
			return
		}
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != pass || req.URL.Path != "/token" {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"token":%q}`, ts.token)
	}))
	cert, ca := localhostCert(t)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	_, port, _ := strings.Cut(strings.TrimPrefix(s.URL, "https://"), ":")
	s.URL = "https://localhost:" + port
	ts.server = server{Server: s, Host: "localhost:" + port, CA: ca, answers: a}
	return ts
}

// localhostCert is a self-signed certificate for the name localhost, and
// its PEM (to trust it).
func localhostCert(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Push stores chart as a Helm OCI artifact at repo:tag (repo such as
// charts/podinfo) and returns the manifest's and the chart layer's
// digests.
func (r *Registry) Push(t testing.TB, repo, tag string, chart []byte) (manifest, layer string) {
	t.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, mediaTypeConfig)
	l := static.NewLayer(chart, mediaTypeChart)
	img, err := mutate.Append(img, mutate.Addendum{Layer: l, MediaType: mediaTypeChart})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.remoteOptions()...); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ld, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String(), ld.String()
}

// Tamper makes the registry serve body in place of the blob of digest.
func (r *Registry) Tamper(digest string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tampered[digest] = body
}

// Ref is oci://HOST/repo:tag.
func (r *Registry) Ref(repo, tagOrDigest string) string {
	sep := ":"
	if strings.HasPrefix(tagOrDigest, "sha256:") {
		sep = "@"
	}
	return "oci://" + r.Host + "/" + repo + sep + tagOrDigest
}

// IndexEntry is a version of a chart in a Repo's index.
type IndexEntry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
	Digest  string   `json:"digest,omitempty"`
}

// Repo is a Helm chart repository: /index.yaml and the files Add put.
type Repo struct {
	server
	mu      sync.Mutex
	entries map[string][]IndexEntry
	files   map[string][]byte
	// index, when set, is served as /index.yaml instead of entries;
	// indexLength says whether with its Content-Length.
	index       []byte
	indexLength bool
}

// NewRepo starts a chart repository; with a user, it asks for basic auth.
func NewRepo(t testing.TB, user, pass string) *Repo {
	r := &Repo{entries: map[string][]IndexEntry{}, files: map[string][]byte{}}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.URL.Path == "/index.yaml" && r.index != nil {
			if r.indexLength {
				w.Header().Set("Content-Length", strconv.Itoa(len(r.index)))
			} else {
				w.(http.Flusher).Flush() // no Content-Length: the body is chunked
			}
			_, _ = w.Write(r.index)
			return
		}
		if req.URL.Path == "/index.yaml" {
			data, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": r.entries})
			_, _ = w.Write(data)
			return
		}
		data, ok := r.files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	})
	r.server = start(t, h, user, pass)
	return r
}

// Add serves chart at /charts/NAME-VERSION.tgz and lists it in the
// index, with a relative URL and its digest; edit changes the entry.
func (r *Repo) Add(name, version string, chart []byte, edit func(*IndexEntry)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := "charts/" + name + "-" + version + ".tgz"
	r.files["/"+p] = chart
	e := IndexEntry{Version: version, URLs: []string{p}, Digest: digest(chart)}
	if edit != nil {
		edit(&e)
	}
	r.entries[name] = append(r.entries[name], e)
}

// ServeIndex serves body as /index.yaml from now on, instead of the index
// of what Add added (a hostile or a huge index); with contentLength, it
// says its length, else it is sent chunked, its length unsaid.
func (r *Repo) ServeIndex(body []byte, contentLength bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.index, r.indexLength = body, contentLength
}

// Serve serves body at p.
func (r *Repo) Serve(p string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[p] = body
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
