package testenv

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

// Module is a Go module at a pinned version: how tests get public Helm
// charts reproducibly. The Go module proxy serves a repository as a
// module at a pseudo-version of a commit (a repository without a go.mod
// too), the zip checked against the checksum database like any module
// and cached in GOMODCACHE, so a chart fetched once renders offline.
type Module struct {
	// Path is the module path, such as github.com/bitnami/charts.
	Path string
	// Version is a tag or a pseudo-version the proxy serves.
	Version string
	// Sum is the module's go.sum hash: what was tested is what is
	// tested again, whatever proxy serves it.
	Sum string
}

// Dir fetches m with `go mod download` (from GOMODCACHE when it is
// there), checks its hash and returns its folder, read-only.
func (m Module) Dir() (string, error) {
	tmp, err := os.MkdirTemp("", "stencil-mod-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command("go", "mod", "download", "-json", m.Path+"@"+m.Version)
	// Outside any module, so that no go.mod or go.sum is read or written.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var res struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &res); jerr == nil && res.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, res.Error)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("go mod download %s@%s: %w", m.Path, m.Version, err)
	case res.Dir == "":
		return "", fmt.Errorf("go mod download %s@%s: no Dir in %s", m.Path, m.Version, out)
	case res.Sum != m.Sum:
		return "", fmt.Errorf("go mod download %s@%s: hash %s, want %s", m.Path, m.Version, res.Sum, m.Sum)
	}
	return res.Dir, nil
}

// CopyTree copies the regular files and folders under src to dst,
// writable (the module cache's are read-only).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
