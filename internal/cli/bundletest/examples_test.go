package bundletest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamples runs `stencil test` over every example bundle (make test
// runs it): each has a tests/ folder, its cases pass, its snapshots are
// up to date and used, and its tests are no files of its Bundle.
func TestExamples(t *testing.T) {
	dirs, err := filepath.Glob("../../../examples/bundles/*")
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, "../../../examples/versions/appservice")
	if len(dirs) < 8 {
		t.Fatalf("found %d example bundles, want the 8 at least: %v", len(dirs), dirs)
	}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, "../../../"), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "tests")); err != nil {
				t.Fatalf("every example bundle has cases: %v", err)
			}
			out, errOut, code := stencilTest(t, dir)
			if code != 0 || errOut != "" {
				t.Errorf("stencil test %s: exit status %d\n%s%s", dir, code, out, errOut)
			}
		})
	}
}
