package bundle_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/bundle"
	"github.com/stencil-dev/stencil/internal/cli/bundletest"
	"github.com/stencil-dev/stencil/internal/cli/exit"
)

// bundleCmd runs stencil bundle args... and returns its output and exit
// code.
func bundleCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := bundle.NewCommand(genericclioptions.NewConfigFlags(false))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), exit.Code(err)
}

// TestInitPassesLintAndTest: a bundle made by init, for Compositions and
// publishing a kind, passes stencil bundle lint and stencil test as
// made, asks for no permission, publishes the kind asked for, and packs
// without its tests.
func TestInitPassesLintAndTest(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		api  *v1alpha1.BundleAPI
	}{
		{"composition", nil, nil},
		{"published kind", []string{"--kind", "WebApp", "--group", "apps.example.com", "--version", "v1beta1"},
			&v1alpha1.BundleAPI{Group: "apps.example.com", Kind: "WebApp", Version: "v1beta1"}},
		{"published kind defaults", []string{"--kind", "Widget"},
			&v1alpha1.BundleAPI{Group: "example.com", Kind: "Widget", Version: "v1alpha1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-app")
			out, code := bundleCmd(t, append([]string{"init", dir}, tt.args...)...)
			if code != 0 {
				t.Fatalf("init: exit status %d\n%s", code, out)
			}
			for _, f := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "stencil.yaml", "templates/_helpers.tpl",
				"templates/deployment.yaml", "templates/service.yaml", "tests/defaults.yaml", "README.md", ".helmignore"} {
				if !strings.Contains(out, "\n  "+f+"\n") {
					t.Errorf("init does not list %s:\n%s", f, out)
				}
			}
			if out, code := lint(t, dir); code != 0 || !strings.Contains(out, "my-app (defaults): 2 objects ok") {
				t.Errorf("bundle lint: exit status %d\n%s", code, out)
			}
			if tt.api != nil {
				if out, _ := lint(t, dir); !strings.Contains(out, "CustomResourceDefinition") {
					t.Errorf("bundle lint does not check the kind's CRD:\n%s", out)
				}
			}
			cmd := bundletest.NewCommand()
			var testOut bytes.Buffer
			cmd.SetOut(&testOut)
			cmd.SetErr(&testOut)
			cmd.SetArgs([]string{dir})
			if err := cmd.Execute(); err != nil || !strings.HasSuffix(testOut.String(), "3 cases: 3 passed, 0 failed\n") {
				t.Errorf("stencil test: %v\n%s", err, testOut.String())
			}

			out, code = bundleCmd(t, "pack", dir)
			if code != 0 {
				t.Fatalf("pack: exit status %d\n%s", code, out)
			}
			var b v1alpha1.Bundle
			if err := yaml.UnmarshalStrict([]byte(out), &b); err != nil {
				t.Fatal(err)
			}
			if p := b.Spec.Permissions; len(p.ClusterScoped) > 0 || len(p.Namespaces) > 0 || len(p.Adopt) > 0 {
				t.Errorf("the bundle asks for permissions: %+v", p)
			}
			for name := range b.Spec.Files {
				if strings.HasPrefix(name, "tests/") || name == ".helmignore" {
					t.Errorf("the Bundle holds %s", name)
				}
			}
			if !slices.Contains(keys(b.Spec.Files), "templates/deployment.yaml") {
				t.Errorf("the Bundle lacks its templates: %v", keys(b.Spec.Files))
			}
			switch {
			case tt.api == nil && b.Spec.API != nil:
				t.Errorf("publishes %+v, want no kind", b.Spec.API)
			case tt.api != nil && (b.Spec.API == nil || b.Spec.API.Group != tt.api.Group || b.Spec.API.Kind != tt.api.Kind || b.Spec.API.Version != tt.api.Version):
				t.Errorf("publishes %+v, want %+v", b.Spec.API, tt.api)
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestInitRefuses: init overwrites nothing, and refuses names it cannot
// make a bundle or a kind of, naming the option.
func TestInitRefuses(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "values.yaml"), []byte("mine: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a folder with files", []string{full}, "error: " + full + " exists and is not empty (it holds values.yaml): bundle init makes a new bundle folder and overwrites nothing\n"},
		{"a file", []string{file}, "error: " + file + " exists and is not a folder: bundle init makes a new bundle folder and overwrites nothing\n"},
		{"a name no bundle may have", []string{filepath.Join(root, "My_App")}, `error: NAME "My_App": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')` + "\n"},
		{"a group without a kind", []string{filepath.Join(root, "a"), "--group", "example.org"}, "error: --group and --version are the published kind's: give --kind too\n"},
		{"a kind not CamelCase", []string{filepath.Join(root, "b"), "--kind", "webApp"}, `error: --kind: Invalid value: "webApp": must be CamelCase: an upper-case letter, then letters and digits, at most 63 characters` + "\n"},
		{"a version not Kubernetes'", []string{filepath.Join(root, "c"), "--kind", "App", "--version", "1.0"}, "error: --version: "},
		{"a group without a dot", []string{filepath.Join(root, "d"), "--kind", "App", "--group", "example"}, "error: --group: "},
		{"a group of Kubernetes'", []string{filepath.Join(root, "e"), "--kind", "App", "--group", "apps.k8s.io"}, "error: --group apps.k8s.io is Kubernetes' own (k8s.io, kubernetes.io): stencil makes no CRD there; choose a group of yours\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, code := bundleCmd(t, append([]string{"init"}, tt.args...)...)
			if code != 1 || !strings.HasPrefix(out, tt.want) || strings.HasSuffix(tt.want, "\n") && out != tt.want {
				t.Errorf("exit status %d, output\n%s\nwant\n%s", code, out, tt.want)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(full, "values.yaml")); err != nil || string(data) != "mine: true\n" {
		t.Errorf("values.yaml of the folder refused is now %q (%v)", data, err)
	}
	if entries, _ := os.ReadDir(full); len(entries) != 1 {
		t.Errorf("the folder refused holds %d files, want its 1", len(entries))
	}
	for _, d := range []string{"a", "b", "c", "d", "e"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			t.Errorf("a refused init made %s", d)
		}
	}

	// An empty folder is fine.
	empty := filepath.Join(root, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, code := bundleCmd(t, "init", empty); code != 0 {
		t.Errorf("an empty folder: exit status %d\n%s", code, out)
	}
}
