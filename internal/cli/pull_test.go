package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// greeterChart is a chart whose ConfigMap says .Values.greeting.
func greeterChart(t *testing.T, version string) []byte {
	return sourcetest.Chart(t, "greeter", version, map[string]string{
		"values.yaml":                 "greeting: hello\n",
		"templates/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  version: {{ .Chart.Version | quote }}\n",
		"charts/sub/Chart.yaml":       "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/s.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\n",
	})
}

func writeCA(t *testing.T, ca []byte) string {
	p := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(p, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRenderBundleSource: render --bundle oci://... and --repo pull the
// chart as the controller does and render it without a Composition file.
func TestRenderBundleSource(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "robot", "s3cret")
	reg.Push(t, "charts/greeter", "1.0.0", greeterChart(t, "1.0.0"))
	regCA := writeCA(t, reg.CA)
	repo := sourcetest.NewRepo(t, "", "")
	repo.Add("greeter", "1.0.0", greeterChart(t, "1.0.0"), nil)
	repo.Add("greeter", "1.2.0", greeterChart(t, "1.2.0"), nil)
	repoCA := writeCA(t, repo.CA)

	for _, tt := range []struct {
		name    string
		args    []string
		version string
	}{
		{"oci", []string{"--bundle", reg.Ref("charts/greeter", "1.0.0"), "--username", "robot", "--password", "s3cret", "--ca-file", regCA}, "1.0.0"},
		{"repo flags", []string{"--repo", repo.URL, "--chart", "greeter", "--version", "~1.0", "--ca-file", repoCA}, "1.0.0"},
		{"repo newest", []string{"--repo", repo.URL, "--chart", "greeter", "--ca-file", repoCA}, "1.2.0"},
		{"repo argument", []string{"--bundle", repo.URL + "#greeter@1.2.0", "--ca-file", repoCA}, "1.2.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"render", "--offline", "--name", "web", "-n", "team", "--set", "greeting=bonjour"}, tt.args...)
			out, errOut, code := stencil(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range []string{"name: web-cfg", "greeting: bonjour", "version: " + tt.version, "name: web-sub"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	t.Run("bad password", func(t *testing.T) {
		_, errOut, code := stencil(t, "", "render", "--offline", "--bundle", reg.Ref("charts/greeter", "1.0.0"), "--username", "robot", "--password", "wr0ng", "--ca-file", regCA)
		if code == 0 || strings.Contains(errOut, "wr0ng") || !strings.Contains(errOut, "UNAUTHORIZED") && !strings.Contains(errOut, "401") {
			t.Errorf("exit %d, stderr %s; want an error saying unauthorized, without the password", code, errOut)
		}
	})
	t.Run("repo and bundle", func(t *testing.T) {
		if _, _, code := stencil(t, "", "render", "--offline", "--bundle", "x", "--repo", repo.URL, "--chart", "greeter"); code == 0 {
			t.Error("--repo with --bundle accepted")
		}
	})
}

// TestPackBundleSource: bundle pack oci://... prints a Bundle holding the
// chart's files, subcharts unpacked.
func TestPackBundleSource(t *testing.T) {
	reg := sourcetest.NewRegistry(t, "", "")
	sub := sourcetest.Chart(t, "dep", "0.3.0", map[string]string{"templates/d.yaml": "kind: ConfigMap\n"})
	reg.Push(t, "charts/greeter", "1.0.0", sourcetest.Chart(t, "greeter", "1.0.0", map[string]string{
		"values.yaml": "a: 1\n", "charts/dep-0.3.0.tgz": string(sub),
	}))
	out, errOut, code := stencil(t, "", "bundle", "pack", reg.Ref("charts/greeter", "1.0.0"), "--ca-file", writeCA(t, reg.CA))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict([]byte(out), b); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if b.Name != "greeter" || b.Spec.Source != nil {
		t.Errorf("name %q, source %v; want greeter and files only", b.Name, b.Spec.Source)
	}
	for _, p := range []string{"Chart.yaml", "values.yaml", "charts/dep/Chart.yaml", "charts/dep/templates/d.yaml"} {
		if _, ok := b.Spec.Files[p]; !ok {
			t.Errorf("no file %s in the packed Bundle", p)
		}
	}
}

// TestRenderPlainHTTP (issue 30 item 7): a chart in a registry served
// over plain http on loopback (an author's local registry) is refused
// unless --plain-http, as Helm's, and renders with it.
func TestRenderPlainHTTP(t *testing.T) {
	reg := sourcetest.NewPlainRegistry(t)
	reg.Push(t, "charts/greeter", "1.0.0", greeterChart(t, "1.0.0"))
	args := []string{"render", "--offline", "--name", "web", "-n", "team", "--bundle", reg.Ref("charts/greeter", "1.0.0")}
	if _, errOut, code := stencil(t, "", args...); code == 0 || !strings.Contains(errOut, "https") {
		t.Errorf("without --plain-http: exit %d, stderr %q; want a refusal saying only https is used", code, errOut)
	}
	out, errOut, code := stencil(t, "", append(args, "--plain-http")...)
	if code != 0 || !strings.Contains(out, "name: web-cfg") {
		t.Errorf("with --plain-http: exit %d: %s\n%s", code, errOut, out)
	}
}
