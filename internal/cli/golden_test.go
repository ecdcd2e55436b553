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
// bundle, and every example instance of a published kind with the bundle
// that publishes it (named like the instance's file), offline, and
// compares with the golden files: what the examples apply is reviewed in
// the diff of any change to them.
func TestRenderExamples(t *testing.T) {
	root := testenv.Root()
	compositions, err := filepath.Glob(filepath.Join(root, "examples", "compositions", "*.yaml"))
	if err != nil || len(compositions) == 0 {
		t.Fatalf("no example compositions (%v)", err)
	}
	instances, err := filepath.Glob(filepath.Join(root, "examples", "instances", "*.yaml"))
	if err != nil || len(instances) == 0 {
		t.Fatalf("no example instances (%v)", err)
	}
	for _, f := range append(compositions, instances...) {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			bundle := name // an instance's bundle: the example bundles are named after their kinds
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
