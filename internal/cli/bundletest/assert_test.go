package bundletest_test

import (
	"slices"
	"strings"
	"testing"
)

// holding are cases of every assertion kind that hold of testdata/demo
// rendered with its defaults: a ConfigMap, a Service and a Deployment
// (the ConfigMap that waits for the Service's clusterIP is held back).
const holding = `cases:
- name: exists
  assert:
  - exists: {kind: Deployment, name: release-name}
  - exists: {apiVersion: apps/v1, kind: Deployment, namespace: default}
  - exists: {kind: ConfigMap, count: 1}
  - exists: {count: 3}
- name: absent
  assert:
  - absent: {kind: ServiceMonitor}
  - absent: {kind: ConfigMap, name: release-name-endpoint}
  - absent: {kind: Deployment, namespace: other}
- name: equal
  assert:
  - equal: {kind: Deployment, path: spec.replicas, value: 1}
  - equal: {kind: Deployment, path: spec.replicas, value: 1.0}
  - equal: {kind: Deployment, path: "spec.template.spec.containers[name=sidecar].image", value: busybox:1.36}
  - equal: {kind: Deployment, path: "spec.template.spec.containers[1].name", value: sidecar}
  - equal: {kind: Deployment, path: spec.selector, value: {matchLabels: {app: release-name}}}
  - equal: {kind: Deployment, path: "spec.template.spec.containers[0].env", value: null}
  - equal: {kind: Deployment, path: 'metadata.annotations["stencil.dev/id"]', value: app}
  - equal: {kind: Service, path: "spec.ports[port=80].name", value: http}
  - equal: {kind: ConfigMap, path: data.upgrade, value: "false"}
- name: match
  assert:
  - match: {kind: Deployment, path: "spec.template.spec.containers[0].image", regex: '^nginx:1\.'}
  - match: {kind: Deployment, path: spec.replicas, regex: '^1$'}
  - match: {path: "metadata.labels['applyset.kubernetes.io/part-of']", regex: '^applyset-'}
- name: cel
  assert:
  - cel: {expression: "objects.size() == 3"}
  - cel: {expression: "members.app.spec.replicas == 1 && members.web.kind == 'Service'"}
  - cel: {expression: "objects.all(o, o.metadata.namespace == 'default')", message: every object in the parent's namespace}
- name: fails
  values: {image: ""}
  assert:
  - fails: {message: 'values\.image'}
`

func TestEveryAssertionHolds(t *testing.T) {
	dir := demo(t, map[string]string{"holding.yaml": holding})
	out, errOut, code := stencilTest(t, dir)
	if code != 0 {
		t.Fatalf("exit status %d, want 0\n%s%s", code, out, errOut)
	}
	cases := parseOutput(t, out)
	for _, name := range []string{"exists", "absent", "equal", "match", "cel", "fails"} {
		if c := cases[name]; c.status != "PASS" || len(c.lines) > 0 {
			t.Errorf("case %s: %s %q, want PASS and nothing more", name, c.status, c.lines)
		}
	}
	if !strings.HasSuffix(out, "6 cases: 6 passed, 0 failed\n") {
		t.Errorf("summary: %q", out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:])
	}
}

// TestEveryAssertionFails: each case fails one assertion, and says
// which, on what object, at what path, expected what and got what.
func TestEveryAssertionFails(t *testing.T) {
	// 300³ comparisons: past the per-call cost limit.
	list := "[" + strings.Repeat("1,", 299) + "1]"
	costly := list + ".all(a, " + list + ".all(b, " + list + ".all(c, a == b)))"
	render := "the render has 3: ConfigMap default/release-name-info, Service default/release-name, Deployment default/release-name"
	tests := []struct {
		name, assert string
		values       string
		want         string // the failure line; a prefix when it ends in "…", a suffix when it starts with one
	}{
		{"exists", `exists: {kind: Ingress}`, "",
			"assert[0] exists: no object matches kind=Ingress (" + render + ")"},
		{"exists count", `exists: {kind: ConfigMap, count: 2}`, "",
			"assert[0] exists: kind=ConfigMap: expected 2 objects, got 1 (ConfigMap default/release-name-info)"},
		{"absent", `absent: {kind: Service}`, "",
			"assert[0] absent: kind=Service: expected no object, got Service default/release-name"},
		{"equal", `equal: {kind: Deployment, path: spec.replicas, value: 3}`, "",
			"assert[0] equal: Deployment default/release-name: spec.replicas: expected 3, got 1"},
		{"equal absent", `equal: {kind: Deployment, path: spec.paused, value: true}`, "",
			"assert[0] equal: Deployment default/release-name: spec.paused: expected true, got (absent)"},
		{"equal through a number", `equal: {kind: Deployment, path: "spec.replicas[0]", value: 1}`, "",
			"assert[0] equal: Deployment default/release-name: spec.replicas[0]: expected 1, got (absent): spec.replicas is a number, not a list"},
		{"equal past a list", `equal: {kind: Deployment, path: "spec.template.spec.containers[2].name", value: x}`, "",
			"assert[0] equal: Deployment default/release-name: spec.template.spec.containers[2].name: expected \"x\", got (absent): spec.template.spec.containers has 2 items"},
		{"equal no item", `equal: {kind: Deployment, path: "spec.template.spec.containers[name=web].image", value: x}`, "",
			"assert[0] equal: Deployment default/release-name: spec.template.spec.containers[name=web].image: expected \"x\", got (absent): spec.template.spec.containers has no item with name=web"},
		{"equal null", `equal: {kind: Deployment, path: spec.replicas, value: null}`, "",
			"assert[0] equal: Deployment default/release-name: spec.replicas: expected null, got 1"},
		{"equal no object", `equal: {kind: Job, path: spec, value: {}}`, "",
			"assert[0] equal: no object matches kind=Job (" + render + ")"},
		{"match", `match: {kind: Deployment, path: "spec.template.spec.containers[0].image", regex: '^httpd'}`, "",
			"assert[0] match: Deployment default/release-name: spec.template.spec.containers[0].image: expected a match of ^httpd, got \"nginx:1.27\""},
		{"match an object", `match: {kind: Service, path: spec.selector, regex: x}`, "",
			"assert[0] match: Service default/release-name: spec.selector: expected a match of x, got an object, {\"app\":\"release-name\"}"},
		{"match absent", `match: {kind: Service, path: spec.clusterIP, regex: x}`, "",
			"assert[0] match: Service default/release-name: spec.clusterIP: expected a match of x, got (absent)"},
		{"cel", `cel: {expression: "objects.size() == 4"}`, "",
			"assert[0] cel: objects.size() == 4: expected true, got false"},
		{"cel message", `cel: {expression: "objects.size() == 4", message: four objects}`, "",
			"assert[0] cel: four objects: expected true, got false"},
		{"cel error", `cel: {expression: "members.nope.spec == 1"}`, "",
			"assert[0] cel: members.nope.spec == 1: no such key: nope"},
		{"cel cost", `cel: {expression: "` + costly + `"}`, "",
			"…: operation cancelled: actual cost limit exceeded"},
		{"fails", `fails: {message: x}`, "",
			"assert[0] fails: expected the render to fail with x, got 3 objects"},
		{"fails otherwise", `fails: {message: '^nope$'}`, `{image: ""}`,
			"assert[0] fails: expected an error matching ^nope$, got: Composition default/release-name: …"},
		{"render fails", `exists: {kind: Deployment}`, `{replicas: -1}`,
			"render: Composition default/release-name: …"},
	}
	var file strings.Builder
	file.WriteString("cases:\n")
	for _, tt := range tests {
		file.WriteString("- name: " + tt.name + "\n")
		if tt.values != "" {
			file.WriteString("  values: " + tt.values + "\n")
		}
		file.WriteString("  assert:\n  - " + tt.assert + "\n")
	}
	dir := demo(t, map[string]string{"failing.yaml": file.String()})
	out, errOut, code := stencilTest(t, dir)
	if code != 1 {
		t.Fatalf("exit status %d, want 1\n%s%s", code, out, errOut)
	}
	cases := parseOutput(t, out)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cases[tt.name]
			if c.status != "FAIL" || len(c.lines) != 1 {
				t.Fatalf("%s %q, want FAIL and one failure", c.status, c.lines)
			}
			got := c.lines[0]
			prefix, isPrefix := strings.CutSuffix(tt.want, "…")
			suffix, isSuffix := strings.CutPrefix(tt.want, "…")
			if isPrefix && !strings.HasPrefix(got, prefix) || isSuffix && !strings.HasSuffix(got, suffix) || !isPrefix && !isSuffix && got != tt.want {
				t.Errorf("failure\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	if want := "20 cases: 0 passed, 20 failed\n"; !strings.HasSuffix(out, want) {
		t.Errorf("output does not end with %q:\n%s", want, out)
	}
	if !strings.Contains(errOut, "error: 20 of 20 cases failed") {
		t.Errorf("stderr: %q", errOut)
	}
	if lines := strings.Split(out, "\n"); !slices.ContainsFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "FAIL "+dir+"/tests/failing.yaml: exists (1 assertion)")
	}) {
		t.Errorf("no line names the case file and case: %s", out)
	}
}
