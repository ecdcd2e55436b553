package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Options are the inputs of an image besides the source tree: each is
// fixed for a commit, so that two builds of it agree.
type Options struct {
	Version   string      // stamped into the binary (main.version) and the labels
	Revision  string      // the commit, for the labels; may be empty
	Epoch     time.Time   // the date of every file, of the config and the history
	Platform  v1.Platform // OS and architecture of the binary
	GoVersion string      // the toolchain's, for the labels
	GoRoot    string      // where the toolchain's zoneinfo.zip is
	Source    string      // the module to build
}

// Result is what Build wrote.
type Result struct {
	Digest v1.Hash
	Size   int64 // of the compressed layers
}

// resolveOptions fills in what was not given from git and the toolchain.
func resolveOptions(ctx context.Context, source, version, epoch, platform string) (Options, error) {
	o := Options{Source: source, Version: version}
	p, err := v1.ParsePlatform(platform)
	if err != nil || p.OS != "linux" || p.Architecture == "" {
		return o, fmt.Errorf("-platform %q: want linux/ARCH", platform)
	}
	o.Platform = *p
	if o.Version == "" {
		if o.Version, err = output(ctx, source, "git", "describe", "--tags", "--always", "--dirty"); err != nil {
			return o, fmt.Errorf("no -version and no git describe: %w", err)
		}
	}
	o.Revision, _ = output(ctx, source, "git", "rev-parse", "HEAD")
	if epoch == "" {
		if epoch, err = output(ctx, source, "git", "log", "-1", "--format=%ct"); err != nil {
			return o, fmt.Errorf("no -epoch, no SOURCE_DATE_EPOCH and no commit time: %w", err)
		}
	}
	secs, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return o, fmt.Errorf("epoch %q: %w", epoch, err)
	}
	o.Epoch = time.Unix(secs, 0).UTC()
	env, err := output(ctx, source, "go", "env", "GOVERSION", "GOROOT")
	if err != nil {
		return o, err
	}
	if f := strings.Split(env, "\n"); len(f) == 2 {
		o.GoVersion, o.GoRoot = strings.TrimPrefix(f[0], "go"), f[1]
	}
	return o, nil
}

// Build compiles the controller, assembles its image and writes it to out
// (replacing what was there): oci/ (an OCI layout), stencil.tar (a
// tarball `docker load` and `ctr images import` read, tagged
// stencil:VERSION) and digest.
func Build(ctx context.Context, o Options, out string) (Result, error) {
	bin, err := compile(ctx, o, ".", "-X main.version="+o.Version)
	if err != nil {
		return Result{}, err
	}
	base, err := baseFiles(o.GoRoot)
	if err != nil {
		return Result{}, err
	}
	img, err := Image(base, bin, o)
	if err != nil {
		return Result{}, err
	}
	return write(img, o, out)
}

// compile builds the main package pkg of o.Source as the image holds it:
// static, with no path, VCS stamp or build id that would differ between
// two machines.
func compile(ctx context.Context, o Options, pkg, ldflags string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "stencil-image-")
	if err != nil {
		return nil, err
	}
	// A temporary folder left behind costs disk, not a wrong image.
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, "stencil")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", strings.TrimSpace("-s -w -buildid= "+ldflags), "-o", bin, pkg)
	cmd.Dir = o.Source
	cmd.Env = buildEnv(os.Environ(), o.Platform)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	return os.ReadFile(bin)
}

// buildEnv is env with every variable that changes the compiled code set
// for the image: no cgo, the platform, the baseline instruction set, and
// of GOFLAGS only -modcacherw (which changes nothing in the output).
func buildEnv(env []string, p v1.Platform) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "GOFLAGS":
			if strings.Contains(v, "-modcacherw") {
				out = append(out, "GOFLAGS=-modcacherw")
			}
		case k == "CGO_ENABLED", k == "GOOS", k == "GOARCH", k == "GOEXPERIMENT", k == "GODEBUG",
			strings.HasPrefix(k, "GOAMD64"), strings.HasPrefix(k, "GOARM"), k == "GO386", k == "GOPPC64", k == "GORISCV64", k == "GOMIPS", k == "GOMIPS64":
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	switch p.Architecture {
	case "amd64":
		out = append(out, "GOAMD64=v1")
	case "arm64":
		out = append(out, "GOARM64=v8.0")
	}
	return out
}

// write replaces out with the image's OCI layout, tarball and digest.
func write(img v1.Image, o Options, out string) (Result, error) {
	digest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	var size int64
	layers, err := img.Layers()
	if err != nil {
		return Result{}, err
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return Result{}, err
		}
		size += n
	}
	if err := os.RemoveAll(out); err != nil {
		return Result{}, err
	}
	p, err := layout.Write(filepath.Join(out, "oci"), empty.Index)
	if err != nil {
		return Result{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Version})); err != nil {
		return Result{}, err
	}
	tag, err := name.NewTag("stencil:" + tagOf(o.Version))
	if err != nil {
		return Result{}, err
	}
	if err := tarball.WriteToFile(filepath.Join(out, "stencil.tar"), tag, img); err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(filepath.Join(out, "digest"), []byte(digest.String()+"\n"), 0o644); err != nil {
		return Result{}, err
	}
	return Result{Digest: digest, Size: size}, nil
}

// tagOf is version as an image tag ([A-Za-z0-9_.-], 128 at most).
func tagOf(version string) string {
	t := []byte(version)
	for i, c := range t {
		if !tagByte(c) {
			t[i] = '_'
		}
	}
	if len(t) > 128 {
		t = t[:128]
	}
	if len(t) == 0 || t[0] == '.' || t[0] == '-' {
		t = append([]byte("v"), t...)
	}
	return string(t)
}

// tagByte reports whether c may stand in an image tag.
func tagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// output runs a command in dir and returns its trimmed standard output.
func output(ctx context.Context, dir, cmd string, args ...string) (string, error) {
	c := exec.CommandContext(ctx, cmd, args...)
	c.Dir = dir
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", cmd, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
