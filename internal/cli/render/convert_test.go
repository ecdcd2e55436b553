package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/render"
)

// bundleDir is the two-version AppService example.
const bundleDir = "../../../examples/versions/appservice"

// renderOffline runs stencil render --offline -f file --bundle bundleDir.
func renderOffline(t *testing.T, file string) (string, error) {
	t.Helper()
	cmd := render.NewCommand(genericclioptions.NewConfigFlags(false))
	var out, stderr bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--offline", "--bundle", bundleDir, "-f", file})
	err := cmd.Execute()
	return out.String(), err
}

// write writes a file of the test's own and returns its path.
func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRenderConvertsOtherVersions: an instance written in v1 renders
// exactly as the same instance written in v2, the render version: it is
// converted first, as the API server converts it for the controller.
func TestRenderConvertsOtherVersions(t *testing.T) {
	v1 := write(t, "v1.yaml", "apiVersion: app.example.com/v1\nkind: AppService\nmetadata:\n  name: web\nspec:\n  size: 3\n  image: nginx:1.27\n  ports:\n  - name: http\n    port: 80\n  - name: metrics\n    port: 9090\n")
	v2 := write(t, "v2.yaml", "apiVersion: app.example.com/v2\nkind: AppService\nmetadata:\n  name: web\nspec:\n  replicas: 3\n  image: nginx:1.27\n  ports: {http: 80, metrics: 9090}\n")
	got, err := renderOffline(t, v1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderOffline(t, v2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("v1 render (-v2 +v1):\n%s", diff)
	}
	for _, s := range []string{"replicas: 3", "containerPort: 9090", "name: metrics"} {
		if !strings.Contains(got, s) {
			t.Errorf("the v1 instance's render lacks %q:\n%s", s, got)
		}
	}
}

// TestRenderUnservedVersion: a version the Bundle does not serve is an
// error naming the versions it serves.
func TestRenderUnservedVersion(t *testing.T) {
	v3 := write(t, "v3.yaml", "apiVersion: app.example.com/v3\nkind: AppService\nmetadata:\n  name: web\nspec: {}\n")
	_, err := renderOffline(t, v3)
	if err == nil || !strings.Contains(err.Error(), "app.example.com/v3 AppService is not a version Bundle appservice serves (it serves v1, v2)") {
		t.Errorf("error %v, want one naming the versions served", err)
	}
}
