package main

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"errors"
	"go/build"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testOptions are the options of an image of a fake binary: everything
// but the compile step, which is Go's own reproducible build.
func testOptions() Options {
	return Options{
		Version:   "v1.2.3",
		Revision:  "0123456789abcdef0123456789abcdef01234567",
		Epoch:     time.Unix(1767225600, 0).UTC(),
		Platform:  v1.Platform{OS: "linux", Architecture: "amd64"},
		GoVersion: strings.TrimPrefix(runtime.Version(), "go"),
		GoRoot:    build.Default.GOROOT,
	}
}

func testImage(t *testing.T, o Options) v1.Image {
	t.Helper()
	base, err := baseFiles(o.GoRoot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := Image(base, []byte("#!fake stencil binary\n"), o)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestImageIsReproducible: the same inputs give the same digest, whatever
// the order of the files, and written to two folders the layouts and
// tarballs hold that digest; another epoch gives another digest.
func TestImageIsReproducible(t *testing.T) {
	o := testOptions()
	base, err := baseFiles(o.GoRoot)
	if err != nil {
		t.Fatal(err)
	}
	reversed := make([]file, len(base))
	for i, f := range base {
		reversed[len(base)-1-i] = f
	}
	a, err := Image(base, []byte("bin"), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Image(reversed, []byte("bin"), o)
	if err != nil {
		t.Fatal(err)
	}
	da, db := digest(t, a), digest(t, b)
	if da != db {
		t.Fatalf("two builds of the same files: %s and %s", da, db)
	}
	for _, dir := range []string{t.TempDir(), t.TempDir()} {
		res, err := write(a, o, dir)
		if err != nil {
			t.Fatal(err)
		}
		img, version, err := FromLayout(dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.Digest != da || digest(t, img) != da || version != o.Version {
			t.Errorf("%s: wrote %s, layout holds %s (version %q), want %s (%s)", dir, res.Digest, digest(t, img), version, da, o.Version)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "digest")); strings.TrimSpace(string(got)) != da.String() {
			t.Errorf("%s/digest: %q, want %s", dir, got, da)
		}
	}
	o.Epoch = o.Epoch.Add(time.Second)
	if dc := digest(t, testImage(t, o)); dc == da {
		t.Errorf("another epoch gave the same digest %s", dc)
	}
}

// TestImageContents: the image runs /stencil as nonroot (65532) from a
// tree where every entry is dated the epoch and owned by a fixed user,
// with a CA bundle Go reads and the time zone database.
func TestImageContents(t *testing.T) {
	o := testOptions()
	img := testImage(t, o)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/stencil" || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config: user %q, entrypoint %q, platform %s/%s", cfg.Config.User, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Equal(o.Epoch) || cfg.Config.Labels["org.opencontainers.image.version"] != o.Version {
		t.Errorf("config: created %s, labels %v", cfg.Created, cfg.Config.Labels)
	}
	files := map[string]*tar.Header{}
	data := map[string][]byte{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(o.Epoch) || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: time %s, owner %q:%q", h.Name, h.ModTime, h.Uname, h.Gname)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		data[strings.TrimSuffix(h.Name, "/")], _ = io.ReadAll(tr)
	}
	for name, want := range map[string]struct {
		mode     int64
		uid, gid int
	}{
		"stencil":       {0o555, 0, 0},
		"etc/passwd":    {0o644, 0, 0},
		"home/nonroot":  {0o700, 65532, 65532},
		"tmp":           {0o1777, 0, 0},
		caFile:          {0o644, 0, 0},
		"etc/ssl/certs": {0o755, 0, 0},
	} {
		h := files[name]
		if h == nil {
			t.Errorf("no /%s", name)
			continue
		}
		if h.Mode != want.mode || h.Uid != want.uid || h.Gid != want.gid {
			t.Errorf("/%s: mode %o uid %d gid %d, want %o %d %d", name, h.Mode, h.Uid, h.Gid, want.mode, want.uid, want.gid)
		}
	}
	if !strings.Contains(string(data["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user nonroot 65532:\n%s", data["etc/passwd"])
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data[caFile]) || strings.Count(string(data[caFile]), "BEGIN CERTIFICATE") < 100 {
		t.Errorf("/%s: not a CA bundle of Mozilla's roots (%d bytes)", caFile, len(data[caFile]))
	}
	if _, err := time.LoadLocationFromTZData("Europe/Paris", data["usr/share/zoneinfo/Europe/Paris"]); err != nil {
		t.Errorf("/usr/share/zoneinfo/Europe/Paris: %v", err)
	}
}

// TestPush: push sends the image to an OCI registry (go-containerregistry's
// own), tagged with its version unless a tag is given, and a pull by the
// digest it prints gives the same image.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	img := testImage(t, o)
	dir := t.TempDir()
	if _, err := write(img, o, dir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ image, tag string }{
		{u.Host + "/stencil", o.Version},
		{u.Host + "/team/stencil:edge", "edge"},
	} {
		ref, err := Push(ctx, dir, tc.image)
		if err != nil {
			t.Fatalf("push %s: %v", tc.image, err)
		}
		repo := strings.TrimSuffix(tc.image, ":edge")
		if want := repo + "@" + digest(t, img).String(); ref != want {
			t.Errorf("push %s printed %s, want %s", tc.image, ref, want)
		}
		for _, r := range []string{ref, repo + ":" + tc.tag} {
			pr, err := name.ParseReference(r)
			if err != nil {
				t.Fatal(err)
			}
			pulled, err := remote.Image(pr, remote.WithContext(ctx))
			if err != nil {
				t.Fatalf("pull %s: %v", r, err)
			}
			if got := digest(t, pulled); got != digest(t, img) {
				t.Errorf("pull %s: digest %s, want %s", r, got, digest(t, img))
			}
		}
	}
	if _, err := Push(ctx, dir, u.Host+"/stencil@"+digest(t, img).String()); err == nil {
		t.Errorf("push to a digest reference: no error")
	}
}

// TestBuildEnv: the compile's environment fixes what changes the code.
func TestBuildEnv(t *testing.T) {
	got := buildEnv([]string{"HOME=/root", "GOFLAGS=-race -modcacherw", "CGO_ENABLED=1", "GOAMD64=v3", "GOARCH=arm64", "GOEXPERIMENT=x"}, v1.Platform{OS: "linux", Architecture: "amd64"})
	want := "HOME=/root GOFLAGS=-modcacherw CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOAMD64=v1"
	if strings.Join(got, " ") != want {
		t.Errorf("buildEnv: %q, want %q", strings.Join(got, " "), want)
	}
}

func digest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
