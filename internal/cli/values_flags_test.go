package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderWithoutComposition: render --bundle with --values, --set and
// --name makes the Composition itself, as helm template makes a release:
// its output is the output of render -f for the Composition those flags
// describe.
func TestRenderWithoutComposition(t *testing.T) {
	bundle := filepath.Join("..", "..", "examples", "bundles", "webapp")
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("replicaCount: 5\nimage: {repository: httpd}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, errOut, code := stencil(t, "", "render", "--bundle", bundle, "--offline", "--name", "blog", "-n", "team-a",
		"--values", values, "--set", "replicaCount=3,ingress.enabled=true", "--set-string", "image.tag=007")
	if code != 0 {
		t.Fatalf("render: exit %d, stderr %s", code, errOut)
	}
	want, errOut, code := stencil(t, compositionYAML("team-a", "blog", "webapp",
		`{"replicaCount": 3, "image": {"repository": "httpd", "tag": "007"}, "ingress": {"enabled": true}}`),
		"render", "-f", "-", "--bundle", bundle, "--offline")
	if code != 0 {
		t.Fatalf("render -f: exit %d, stderr %s", code, errOut)
	}
	if got != want {
		t.Errorf("render --values --set:\n%s\nwant what render -f prints for the same Composition:\n%s", got, want)
	}
	for _, s := range []string{"replicas: 3", "image: httpd:007", "kind: Ingress", "namespace: team-a", "name: blog"} {
		if !strings.Contains(got, s) {
			t.Errorf("render output lacks %q:\n%s", s, got)
		}
	}

	t.Run("errors", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"render"}, "give -f"},
			{[]string{"render", "--bundle", bundle, "--offline", "--set", "a[x]=1"}, `list index "x" is not a number`},
			{[]string{"render", "--bundle", bundle, "--offline", "--name", "Not_A_Name"}, `--name "Not_A_Name"`},
			{[]string{"render", "-f", "-", "--bundle", bundle, "--offline", "--set", "a=1"}, "give them without -f"},
			// A value the schema refuses names its path, as for a Composition's values.
			{[]string{"render", "--bundle", bundle, "--offline", "--set", "replicaCount=many"}, "replicaCount"},
		} {
			_, errOut, code := stencil(t, compositionYAML("default", "c", "webapp", "{}"), tt.args...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: exit %d, stderr %q; want an error saying %q", tt.args, code, errOut, tt.want)
			}
		}
	})
}

// TestLintWithSet: lint's --set applies over the defaults and over each
// values file, and a value the schema refuses is a problem naming its
// path.
func TestLintWithSet(t *testing.T) {
	bundle := filepath.Join("..", "..", "examples", "bundles", "webapp")
	out, errOut, code := stencil(t, "", "bundle", "lint", bundle, "--offline", "--set", "replicaCount=4")
	if code != 0 || !strings.Contains(out, "(defaults with --set): ") || !strings.Contains(out, "objects ok") {
		t.Errorf("lint --set: exit %d, stdout %q, stderr %q; want the defaults with --set ok", code, out, errOut)
	}
	out, _, code = stencil(t, "", "bundle", "lint", bundle, "--offline", "--set", "replicaCount=many")
	if code != 1 || !strings.Contains(out, "replicaCount") {
		t.Errorf("lint --set replicaCount=many: exit %d, stdout %q; want a problem naming replicaCount", code, out)
	}
}
