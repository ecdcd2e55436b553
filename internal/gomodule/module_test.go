package gomodule

import (
	"archive/zip"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// fileProxy writes a module proxy folder (GOPROXY=file://…) serving one
// module at one version holding files, and returns the module's go.sum
// hash, computed from the zip as the go command does.
func fileProxy(t *testing.T, dir, path, version string, files map[string]string) string {
	t.Helper()
	v := filepath.Join(dir, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(v, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", version+"\n")
	write(version+".info", `{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`)
	write(version+".mod", "module "+path+"\n")
	zipfile := filepath.Join(v, version+".zip")
	f, err := os.Create(zipfile)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.Create(path + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := dirhash.HashZip(zipfile, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestModuleDir fetches from a proxy on disk into a module cache of the
// test's own: the pinned hash is checked, and the user's GOFLAGS kept
// (-modcacherw: the module's folder is left writable, which the test
// checks, and the test can remove the cache).
func TestModuleDir(t *testing.T) {
	proxy := t.TempDir()
	const path, version = "example.com/charts", "v1.2.3"
	sum := fileProxy(t, proxy, path, version, map[string]string{
		"demo/Chart.yaml":        "apiVersion: v2\nname: demo\nversion: 1.0.0\n",
		"demo/templates/cm.yaml": "kind: ConfigMap\n",
		"README.md":              "charts\n",
	})
	t.Setenv("GOPROXY", "file://"+filepath.ToSlash(proxy))
	t.Setenv("GOSUMDB", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw")

	t.Run("the pinned hash gives the module's folder", func(t *testing.T) {
		dir, err := Module{Path: path, Version: version, Sum: sum}.Dir()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "demo", "Chart.yaml"))
		if err != nil || !strings.Contains(string(b), "name: demo") {
			t.Errorf("demo/Chart.yaml in %s: %q, %v", dir, b, err)
		}
		// The mode bits, not a write, since root writes read-only folders.
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o200 == 0 {
			t.Errorf("%s is %v, want it writable as GOFLAGS=-modcacherw leaves it", dir, fi.Mode())
		}
	})
	t.Run("another hash is refused, naming both", func(t *testing.T) {
		const wrong = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		_, err := Module{Path: path, Version: version, Sum: wrong}.Dir()
		if err == nil || !strings.Contains(err.Error(), "hash "+sum+", want "+wrong) {
			t.Errorf("err = %v, want the hash mismatch", err)
		}
	})
	t.Run("a version the proxy does not serve is the go command's error", func(t *testing.T) {
		_, err := Module{Path: path, Version: "v9.9.9", Sum: sum}.Dir()
		if err == nil || !strings.Contains(err.Error(), "go mod download "+path+"@v9.9.9") {
			t.Errorf("err = %v, want one naming the module", err)
		}
	})
}
