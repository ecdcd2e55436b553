package bundletest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadCaseFiles: a case file that cannot be run is refused before
// any case runs, every problem named by the file and the field.
func TestBadCaseFiles(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // the problems, each after "FILE: "
	}{
		{"not YAML", "cases: [\n", []string{
			"(file): Invalid value: yaml: line 1: did not find expected node content"}},
		{"duplicate key", "cases:\n- name: a\n  name: b\n", []string{
			`(file): Invalid value: yaml: unmarshal errors:` + "\n  line 3: key \"name\" already set in map"}},
		{"empty", "", []string{"cases: Required value: a case file holds cases: a list of at least one case"}},
		{"no cases", "cases: []\n", []string{"cases: Required value: a case file holds cases: a list of at least one case"}},
		{"cases not a list", "cases: {name: a}\n", []string{"cases: Invalid value: want a list, not an object"}},
		{"unknown top field", "cases: [{name: a, assert: [{exists: {}}]}]\nsuite: x\n", []string{"suite: Forbidden: unknown field"}},
		{"case fields", `cases:
- name: a
  valuez: {}
  assert: [{exists: {kind: A, kinds: B}}]
- name: y
  assert: [{exists: {}}]
- name: a
  assert: [{exists: {count: two}}]
- name: ""
  assert: []
`, []string{
			"cases[0].valuez: Forbidden: unknown field",
			"cases[0].assert[0].exists.kinds: Forbidden: unknown field",
			"cases[1].name: Invalid value: want a string, not a boolean (a bare y, n, yes, no, on or off is one: quote it)",
			"cases[2].assert[0].exists.count: Invalid value: want an integer, not a string",
			"cases[3].name: Required value: say what the case checks",
			"cases[3].assert: Required value: a case asserts something: exists, absent, equal, match, cel, snapshot or fails",
		}},
		{"assertions", `cases:
- name: a
  assert:
  - {}
  - exists: {kind: A}
    absent: {kind: B}
  - exists: {count: -1}
  - equal: {kind: Deployment, path: "spec..replicas", value: 1}
  - equal: {kind: Deployment, path: "spec.replicas"}
  - equal: {path: "spec.containers[x", value: 1}
  - match: {path: a, regex: "("}
  - match: {path: a}
  - cel: {expression: "objects.size()"}
  - cel: {expression: "objects.foo("}
  - cel: {expression: ""}
  - snapshot: {kind: A}
  - snapshot: {kind: B}
  - snapshot: {name: "?"}
- name: b
  assert:
  - fails: {message: x}
  - exists: {}
- name: c
  assert:
  - fails: {}
`, []string{
			"cases[0].assert[0]: Required value: one of exists, absent, equal, match, cel, snapshot, fails",
			`cases[0].assert[1]: Invalid value: "exists, absent": want exactly one of exists, absent, equal, match, cel, snapshot, fails`,
			"cases[0].assert[2].exists.count: Invalid value: -1: must be 0 or more (absent says none)",
			`cases[0].assert[3].equal.path: Invalid value: "spec..replicas": a name is empty (two dots, or a dot at an end)`,
			"cases[0].assert[4].equal.value: Required value: what the field must equal (null: absent)",
			`cases[0].assert[5].equal.path: Invalid value: "spec.containers[x": at "[x": [ without ]`,
			"cases[0].assert[6].match.regex: Invalid value: \"(\": error parsing regexp: missing closing ): `(`",
			`cases[0].assert[7].match.regex: Invalid value: "": empty: a regular expression`,
			`cases[0].assert[8].cel.expression: Invalid value: "objects.size()": the expression's type is int, want bool`,
			`cases[0].assert[9].cel.expression: Invalid value: "objects.foo(": 1:13: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', ')', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`,
			`cases[0].assert[10].cel.expression: Invalid value: "": empty`,
			`cases[0].assert[12].snapshot.name: Duplicate value: ""`,
			`cases[0].assert[13].snapshot.name: Invalid value: "?": needs a letter or a digit, to name the snapshot file by`,
			"cases[1].assert: Invalid value: fails holds alone: a render that fails has no objects to assert on",
			`cases[2].assert[0].fails.message: Invalid value: "": empty: a regular expression`,
		}},
		{"fixtures", `cases:
- name: a
  valuesFiles: [missing.yaml, /etc/passwd]
  parent: {name: Bad_Name, namespace: a.b, kind: Other}
  capabilities: {kubeVersion: "1.x", apiVersions: ["nope/v1/x/y", apps/v1, apps], withoutAPIVersions: [""], clusterScoped: [Widget]}
  lookups: [{kind: Secret, metadata: {name: x}}, {apiVersion: v1, kind: Secret}]
  observed: {web: 3}
  assert: [{exists: {}}]
- name: b
  values: [1]
  parent: {apiVersion: demo.example.com/v1}
  assert: [{exists: {}}]
- name: c
  parent: {kind: Demo, apiVersion: other.example.com/v1}
  assert: [{exists: {}}]
`, []string{
			`cases[0].valuesFiles[0]: Invalid value: "missing.yaml": open DIR/tests/missing.yaml: no such file or directory`,
			`cases[0].valuesFiles[1]: Invalid value: "/etc/passwd": a path relative to the case file's folder`,
			`cases[0].parent.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`cases[0].parent.namespace: Invalid value: "a.b": must not contain dots`,
			`cases[0].parent.kind: Unsupported value: "Other": supported values: "Composition", "Demo"`,
			`cases[0].capabilities.kubeVersion: Invalid value: "1.x": want a Kubernetes version such as v1.30.2`,
			`cases[0].capabilities.apiVersions[0]: Invalid value: "nope/v1/x/y": want group/version or group/version/Kind, such as monitoring.coreos.com/v1/ServiceMonitor`,
			`cases[0].capabilities.apiVersions[2]: Invalid value: "apps": want group/version or group/version/Kind, such as monitoring.coreos.com/v1/ServiceMonitor`,
			`cases[0].capabilities.withoutAPIVersions[0]: Invalid value: "": want group/version or group/version/Kind, such as monitoring.coreos.com/v1/ServiceMonitor`,
			`cases[0].capabilities.clusterScoped[0]: Invalid value: "Widget": want group/Kind, such as example.com/Widget (/Kind for the core group)`,
			"cases[0].lookups[0].apiVersion: Required value: the object a lookup answers has an apiVersion, a kind and a metadata.name",
			"cases[0].lookups[1].metadata.name: Required value: the object a lookup answers has an apiVersion, a kind and a metadata.name",
			"cases[0].observed[web]: Invalid value: want the member's live fields, an object such as {spec: {clusterIP: 10.0.0.10}}",
			"cases[1].values: Invalid value: want an object of values",
			`cases[1].parent.apiVersion: Invalid value: "demo.example.com/v1": only for an instance of the kind the bundle publishes (parent.kind)`,
			`cases[2].parent.apiVersion: Invalid value: "other.example.com/v1": want demo.example.com/VERSION, a version of the kind the bundle publishes`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := demo(t, map[string]string{"bad.yaml": tt.file, "good.yaml": "cases: [{name: a, assert: [{exists: {}}]}]\n"})
			out, errOut, code := stencilTest(t, dir)
			if code != 1 || out != "" {
				t.Errorf("exit status %d, output %q: want 1 and no case run", code, out)
			}
			file := filepath.Join(dir, "tests", "bad.yaml")
			rest, ok := strings.CutPrefix(errOut, "error: "+file+": ")
			if !ok {
				t.Fatalf("the error does not start with the file's name: %s", errOut)
			}
			var got []string
			for _, problem := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n"+file+": ") {
				got = append(got, strings.ReplaceAll(problem, dir, "DIR"))
			}
			if len(got) != len(tt.want) {
				t.Errorf("%d problems, want %d:\n%s", len(got), len(tt.want), errOut)
			}
			for i := range min(len(got), len(tt.want)) {
				if got[i] != tt.want[i] {
					t.Errorf("problem %d\n got %s\nwant %s", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestNoCases: a folder without tests/, or without case files in it,
// is an error that says where cases go.
func TestNoCases(t *testing.T) {
	dir := demo(t, nil)
	if _, errOut, code := stencilTest(t, dir); code != 1 || errOut != "error: "+dir+": no tests/ folder: a bundle's cases are YAML files in it (stencil bundle init makes one)\n" {
		t.Errorf("no tests/: exit status %d, %q", code, errOut)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tests", "values"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := stencilTest(t, dir); code != 1 || errOut != "error: "+filepath.Join(dir, "tests")+": no case files (*.yaml)\n" {
		t.Errorf("empty tests/: exit status %d, %q", code, errOut)
	}
	// A bundle that does not load is named, with why.
	if err := os.WriteFile(filepath.Join(dir, "stencil.yaml"), []byte("nope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := stencilTest(t, dir); code != 1 || !strings.HasPrefix(errOut, "error: "+dir+": ") || !strings.Contains(errOut, "stencil.yaml") {
		t.Errorf("a bundle that does not load: exit status %d, %q", code, errOut)
	}
}

// TestTestsOutsideTheBundle: a bundle whose files hold its tests/ (no
// .helmignore leaving them out) gets a note saying how to leave them
// out; its cases still run.
func TestTestsOutsideTheBundle(t *testing.T) {
	dir := demo(t, map[string]string{"a.yaml": "cases: [{name: a, assert: [{exists: {}}]}]\n"})
	if err := os.Remove(filepath.Join(dir, ".helmignore")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := stencilTest(t, dir)
	want := "note: " + dir + ": the bundle's files hold tests/a.yaml (1 file of tests/ in all): add tests/ to .helmignore to leave the tests out of the Bundle\n"
	if code != 0 || errOut != want {
		t.Errorf("exit status %d, stderr %q, want %q\n%s", code, errOut, want, out)
	}
}
