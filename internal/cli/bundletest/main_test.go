package bundletest_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/internal/cli/bundletest"
	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/sandbox"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) {
	sandbox.Main() // the render pool re-executes this test binary as its workers
	flag.Parse()
	os.Exit(m.Run())
}

// demo copies testdata/demo, a bundle that publishes a kind, looks up a
// Secret, observes its Service and reads .Capabilities, into a new
// folder, with files (name → content) in its tests/.
func demo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.CopyFS(dir, os.DirFS("testdata/demo")); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		path := filepath.Join(dir, "tests", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// stencilTest runs `stencil test args...` and returns its output, its
// error output and its exit status.
func stencilTest(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := bundletest.NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exit.Code(err)
}

// caseOutput is what the output says of one case.
type caseOutput struct {
	status string   // PASS or FAIL
	lines  []string // the lines under it, unindented
}

// parseOutput reads the output of stencil test into each case's status
// and lines, by case name.
func parseOutput(t *testing.T, out string) map[string]caseOutput {
	t.Helper()
	cases := map[string]caseOutput{}
	var name string
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, "    "); ok && name != "" {
			c := cases[name]
			c.lines = append(c.lines, rest)
			cases[name] = c
			continue
		}
		status, rest, _ := strings.Cut(line, " ")
		if status != "PASS" && status != "FAIL" {
			name = ""
			continue
		}
		_, rest, _ = strings.Cut(rest, ": ")
		name = rest[:strings.LastIndex(rest, " (")]
		cases[name] = caseOutput{status: status}
	}
	return cases
}
