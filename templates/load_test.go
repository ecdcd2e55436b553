package templates_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// TestLoadLinks: a bundle folder holds regular files and folders only; a
// symbolic link is refused wherever it points, with a RenderError naming
// it, whether the folder is read through os.DirFS or an os.Root.
func TestLoadLinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		link     string // a link in the bundle folder
		target   string // where it points
		relative bool   // written relative to the link's folder
	}{
		{"to a file outside", "templates/passwd.yaml", secret, false},
		{"to a folder outside", "templates/more", outside, false},
		{"relative, escaping", "conf/app.ini", secret, true},
		{"to a file inside", "templates/copy.yaml", "deployment.yaml", false},
	}
	for _, tt := range tests {
		for _, via := range []string{"os.DirFS", "os.Root"} {
			t.Run(tt.name+" via "+via, func(t *testing.T) {
				dir := t.TempDir()
				writeBundleFolder(t, dir, map[string]string{"values.yaml": "replicas: 1\n", "templates/deployment.yaml": kDeployment, "conf/.keep": ""})
				link, target := filepath.Join(dir, tt.link), tt.target
				if tt.relative {
					var err error
					if target, err = filepath.Rel(filepath.Dir(link), target); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(link); err != nil {
					t.Fatalf("the link does not resolve: %v", err)
				}
				_, err := templates.Load(folderFS(t, via, dir), templates.LoadOptions{Name: "x"})
				var re *templates.RenderError
				if !errors.As(err, &re) || re.File != tt.link || !strings.Contains(re.Msg, "symbolic link") {
					t.Errorf("err = %v, want a RenderError naming %s as a symbolic link", err, tt.link)
				}
				if err != nil && strings.Contains(err.Error(), "root:x") {
					t.Errorf("err shows the linked file: %v", err)
				}
			})
		}
	}

	// The folder itself may be reached through a link.
	t.Run("folder through a link", func(t *testing.T) {
		dir := t.TempDir()
		writeBundleFolder(t, dir, map[string]string{"values.yaml": "replicas: 1\n", "templates/deployment.yaml": kDeployment})
		link := filepath.Join(t.TempDir(), "bundle")
		if err := os.Symlink(dir, link); err != nil {
			t.Fatal(err)
		}
		for _, via := range []string{"os.DirFS", "os.Root"} {
			if _, err := templates.Load(folderFS(t, via, link), templates.LoadOptions{Name: "x"}); err != nil {
				t.Errorf("via %s: %v", via, err)
			}
		}
	})
}

func folderFS(t *testing.T, via, dir string) fs.FS {
	t.Helper()
	if via == "os.DirFS" {
		return os.DirFS(dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := root.Close(); err != nil {
			t.Error(err)
		}
	})
	return root.FS()
}

func writeBundleFolder(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadOptionsAPI: stencil.yaml's api: becomes spec.api as written (no
// defaults filled in), and an unknown key in it is an error naming the file.
func TestLoadOptionsAPI(t *testing.T) {
	dir := t.TempDir()
	writeBundleFolder(t, dir, map[string]string{
		"templates/deployment.yaml": kDeployment, "values.yaml": "replicas: 1\n",
		"stencil.yaml": "api:\n  group: app.example.com\n  kind: AppService\n  shortNames: [as]\n  defaults:\n    suspend: true\n",
	})
	b, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "appservice"})
	if err != nil {
		t.Fatal(err)
	}
	api := b.Spec().API
	if api == nil || api.Group != "app.example.com" || api.Kind != "AppService" || api.Version != "" || api.Plural != "" ||
		len(api.ShortNames) != 1 || api.ShortNames[0] != "as" || !api.Defaults.Suspend {
		t.Errorf("spec.api = %+v, want the stencil.yaml api as written", api)
	}
	if _, ok := b.Spec().Files["stencil.yaml"]; ok {
		t.Error("stencil.yaml stayed among the files")
	}

	writeBundleFolder(t, dir, map[string]string{"stencil.yaml": "api:\n  group: app.example.com\n  kind: AppService\n  plurals: appservices\n"})
	_, err = templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "appservice"})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "stencil.yaml" || !strings.Contains(err.Error(), "plurals") {
		t.Errorf("unknown key under api: err = %v, want a RenderError of stencil.yaml naming plurals", err)
	}
}
