package e2e_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl runs kubectl against the local cluster, as a user of the
// published kinds would, with a discovery cache of its own (a cluster of
// an earlier run may have had the same address and other kinds).
type kubectl struct {
	bin, kubeconfig, cacheDir string
}

// newKubectl uses the kubectl of KUBEBUILDER_ASSETS (the cluster's own
// release) when there is one, else the one on PATH.
func newKubectl(t *testing.T, kubeconfig string) kubectl {
	t.Helper()
	k := kubectl{kubeconfig: kubeconfig, cacheDir: t.TempDir()}
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		if bin := filepath.Join(assets, "kubectl"); isFile(bin) {
			k.bin = bin
			return k
		}
	}
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("no kubectl in KUBEBUILDER_ASSETS or on PATH: %v", err)
	}
	k.bin = bin
	return k
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// run runs kubectl with args and stdin, and returns its output, its error
// output and whether it failed.
func (k kubectl) run(stdin string, args ...string) (string, string, error) {
	cmd := exec.Command(k.bin, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// mustRun runs kubectl and fails the test when it fails.
func (k kubectl) mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := k.run(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}
