package bundletest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const snapshots = `cases:
- name: All Objects!
  assert:
  - snapshot: {}
- name: service
  values: {replicas: 2}
  assert:
  - snapshot: {kind: Service}
  - snapshot: {kind: Deployment, name: deployment}
`

// TestSnapshots: a missing snapshot fails and says how to write it;
// --update-snapshots writes it, as render prints the objects, and then
// it passes; a change of the render fails with a diff, and is written
// over by --update-snapshots; a snapshot that matches is not written.
func TestSnapshots(t *testing.T) {
	dir := demo(t, map[string]string{"snap.yaml": snapshots})
	all := filepath.Join(dir, "tests", "__snapshot__", "snap", "all-objects.yaml")
	service := filepath.Join(dir, "tests", "__snapshot__", "snap", "service.yaml")
	deployment := filepath.Join(dir, "tests", "__snapshot__", "snap", "service-deployment.yaml")

	out, _, code := stencilTest(t, dir)
	cases := parseOutput(t, out)
	if c := cases["All Objects!"]; code != 1 || c.status != "FAIL" ||
		len(c.lines) != 1 || c.lines[0] != "assert[0] snapshot: "+all+" does not exist: run stencil test --update-snapshots to write it" {
		t.Fatalf("without snapshots: exit status %d, %+v\n%s", code, c, out)
	}

	out, _, code = stencilTest(t, dir, "--update-snapshots")
	cases = parseOutput(t, out)
	if code != 0 || cases["All Objects!"].status != "PASS" || cases["service"].status != "PASS" {
		t.Fatalf("--update-snapshots: exit status %d\n%s", code, out)
	}
	if got := cases["service"].lines; len(got) != 2 || got[0] != "wrote "+service || got[1] != "wrote "+deployment {
		t.Errorf("--update-snapshots says %q, want the two files of case service", got)
	}
	data, err := os.ReadFile(service)
	if err != nil {
		t.Fatal(err)
	}
	want := `---
apiVersion: v1
kind: Service
metadata:
  annotations:
    stencil.dev/id: web
  labels:
    applyset.kubernetes.io/part-of: applyset-1VchUbk8JWrOJaZJHCDBqIydaytEjiJbpgJ8hRjwgvU-v1
  name: release-name
  namespace: default
spec:
  ports:
  - name: http
    port: 80
  selector:
    app: release-name
`
	if string(data) != want {
		t.Errorf("%s:\n%s\nwant\n%s", service, data, want)
	}
	if data, err := os.ReadFile(all); err != nil || strings.Count(string(data), "---\n") != 3 {
		t.Errorf("%s holds %d documents, want 3 (%v)", all, strings.Count(string(data), "---\n"), err)
	}

	if out, _, code = stencilTest(t, dir); code != 0 {
		t.Fatalf("with snapshots: exit status %d\n%s", code, out)
	}

	// The render changes: replicas 2 → 3.
	edited := strings.Replace(snapshots, "{replicas: 2}", "{replicas: 3}", 1)
	if err := os.WriteFile(filepath.Join(dir, "tests", "snap.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = stencilTest(t, dir)
	cases = parseOutput(t, out)
	c := cases["service"]
	if code != 1 || c.status != "FAIL" || len(c.lines) == 0 {
		t.Fatalf("after a change: exit status %d, %+v\n%s", code, c, out)
	}
	diff := strings.Join(c.lines, "\n")
	for _, line := range []string{"assert[1] snapshot: the render differs from " + deployment + " (--update-snapshots rewrites it):", "-  replicas: 2", "+  replicas: 3"} {
		if !strings.Contains(diff, line) {
			t.Errorf("the failure lacks %q:\n%s", line, diff)
		}
	}
	if strings.Contains(diff, "assert[0]") {
		t.Errorf("the Service's snapshot, unchanged, fails too:\n%s", diff)
	}

	out, _, code = stencilTest(t, dir, "--update-snapshots")
	cases = parseOutput(t, out)
	if got := cases["service"].lines; code != 0 || len(got) != 1 || got[0] != "wrote "+deployment {
		t.Errorf("--update-snapshots after a change: exit status %d, %q, want only %s written", code, got, deployment)
	}
	if data, _ := os.ReadFile(deployment); !strings.Contains(string(data), "  replicas: 3\n") {
		t.Errorf("%s was not rewritten:\n%s", deployment, data)
	}

	// A snapshot no case compares with is named, to be deleted.
	old := filepath.Join(dir, "tests", "__snapshot__", "snap", "renamed.yaml")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := stencilTest(t, dir)
	if want := "note: " + old + " is no case's snapshot (a case renamed or removed?): delete it\n"; code != 0 || errOut != want {
		t.Errorf("an unused snapshot: exit status %d, stderr %q, want %q", code, errOut, want)
	}
}
