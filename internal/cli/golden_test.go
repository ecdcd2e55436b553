package cli_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestRenderExamples renders every example Composition with its example
// bundle, offline, and compares with the golden files: what the examples
// apply is reviewed in the diff of any change to them.
func TestRenderExamples(t *testing.T) {
	root := testenv.Root()
	files, err := filepath.Glob(filepath.Join(root, "examples", "compositions", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example compositions (%v)", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			bundle := ""
			for _, line := range strings.Split(string(data), "\n") {
				if b, ok := strings.CutPrefix(strings.TrimSpace(line), "bundle: "); ok {
					bundle = b
					break
				}
			}
			out, errOut, code := stencil(t, "", "render", "-f", f, "--bundle", filepath.Join(root, "examples", "bundles", bundle), "--offline")
			if code != 0 {
				t.Fatalf("render %s: exit %d: %s", f, code, errOut)
			}
			path := filepath.Join("testdata", "render-"+name+".golden.yaml")
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./internal/cli -run TestRenderExamples -update writes it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("render of %s (-want +got):\n%s", f, diff)
			}
		})
	}
}
