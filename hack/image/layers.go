package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The user the controller runs as: not root, with no home it can write
// (the root file system is read-only in the Deployment).
const (
	uid     = 65532
	gid     = 65532
	user    = "nonroot"
	binPath = "stencil"
	// caFile is where Go (and most TLS stacks) look for the system's roots.
	caFile = "etc/ssl/certs/ca-certificates.crt"
)

// file is one entry of a layer: a regular file, or a folder when dir.
type file struct {
	name     string // relative to /, without a trailing slash
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// baseFiles are the files of the base layer: the users, Mozilla's CA
// bundle, the toolchain's time zone database and the usual folders.
func baseFiles(goroot string) ([]file, error) {
	files := []file{
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			fmt.Sprintf("%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", user, uid, gid, user, user))},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", user, gid))},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: caFile, mode: 0o644, data: caBundle()},
		{name: "home/" + user, mode: 0o700, uid: uid, gid: gid, dir: true},
		{name: "root", mode: 0o700, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
	zones, err := zoneinfo(filepath.Join(goroot, "lib", "time", "zoneinfo.zip"))
	if err != nil {
		return nil, err
	}
	return append(files, zones...), nil
}

// caBundle is the PEM of every root of golang.org/x/crypto/x509roots/fallback
// (Mozilla's NSS roots at the version go.mod pins) that holds without a
// constraint: a PEM file cannot carry one, so a root trusted only for
// certificates issued before a date is left out rather than trusted for all.
func caBundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// zoneinfo unpacks the toolchain's zoneinfo.zip under usr/share/zoneinfo,
// where Go and the C library look.
func zoneinfo(zipPath string) ([]file, error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("time zone database: %w", err)
	}
	// Read only: closing it reports nothing about what was read.
	defer func() { _ = z.Close() }()
	var files []file
	for _, f := range z.File {
		if f.FileInfo().IsDir() {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{name: path.Join("usr/share/zoneinfo", f.Name), mode: 0o644, data: data})
	}
	return files, nil
}

// Image assembles the image: the base layer, the binary's layer (/stencil,
// run as nonroot), dated o.Epoch.
func Image(base []file, binary []byte, o Options) (v1.Image, error) {
	baseLayer, err := layer(base, o.Epoch)
	if err != nil {
		return nil, err
	}
	binLayer, err := layer([]file{{name: binPath, mode: 0o555, data: binary}}, o.Epoch)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: o.Epoch}
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: o.Platform.Architecture,
		OS:           o.Platform.OS,
		Variant:      o.Platform.Variant,
		Created:      created,
		Config: v1.Config{
			User:       fmt.Sprintf("%d:%d", uid, gid),
			Entrypoint: []string{"/" + binPath},
			WorkingDir: "/",
			Env:        []string{"PATH=/"},
			Labels: map[string]string{
				"org.opencontainers.image.title":    "stencil",
				"org.opencontainers.image.source":   "https://github.com/stencil-dev/stencil",
				"org.opencontainers.image.version":  o.Version,
				"org.opencontainers.image.revision": o.Revision,
				"org.opencontainers.image.created":  o.Epoch.Format(time.RFC3339),
				"dev.stencil.go-version":            o.GoVersion,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, History: v1.History{Created: created, CreatedBy: "hack/image: users, CA bundle, time zone data", Comment: "base"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "hack/image: go build -trimpath (CGO_ENABLED=0)", Comment: "stencil " + o.Version}},
	)
}

// layer is a gzipped tar of files and their parent folders, sorted by
// name, every entry dated epoch, owned as given (root by default) and
// with no user or group names.
func layer(files []file, epoch time.Time) (v1.Layer, error) {
	entries := map[string]file{}
	for _, f := range files {
		if !cleanRelative(f.name) {
			return nil, fmt.Errorf("layer entry %q: not a clean relative path", f.name)
		}
		entries[f.name] = f
		for dir := path.Dir(f.name); dir != "."; dir = path.Dir(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = file{name: dir, mode: 0o755, dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: epoch, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			h.Name, h.Typeflag, h.Size = f.name+"/", tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// cleanRelative reports whether name is a clean relative path inside the layer.
func cleanRelative(name string) bool {
	return name != "" && name != "." && path.Clean(name) == name && !path.IsAbs(name) && !strings.HasPrefix(name, "../")
}
