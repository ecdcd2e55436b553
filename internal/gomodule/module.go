package gomodule

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Module is a Go module at a pinned version.
type Module struct {
	// Path is the module path, such as github.com/bitnami/charts.
	Path string
	// Version is a tag or a pseudo-version of a commit the proxy serves.
	Version string
	// Sum is the module's go.sum hash at that version ("h1:…").
	Sum string
}

// String is the module's path@version.
func (m Module) String() string { return m.Path + "@" + m.Version }

// Dir fetches m with `go mod download` (from GOMODCACHE when it is
// there), checks its hash is m.Sum and returns its folder in the module
// cache, read-only. GOFLAGS is kept, with -mod=mod added; GOWORK is off.
func (m Module) Dir() (string, error) {
	tmp, err := os.MkdirTemp("", "stencil-mod-")
	if err != nil {
		return "", err
	}
	// An empty folder, only the command's working directory: one left
	// behind in TMPDIR is not the download's failure.
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.Command("go", "mod", "download", "-json", m.String())
	// Outside any module, so that no go.mod or go.sum is read or written.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var res struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &res); jerr == nil && res.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", m, res.Error)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("go mod download %s: %w", m, err)
	case res.Dir == "":
		return "", fmt.Errorf("go mod download %s: no Dir in %s", m, out)
	case res.Sum != m.Sum:
		return "", fmt.Errorf("go mod download %s: hash %s, want %s", m, res.Sum, m.Sum)
	}
	return res.Dir, nil
}
