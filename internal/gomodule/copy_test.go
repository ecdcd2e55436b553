package gomodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyTree(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "templates", "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	// As the module cache holds them: read-only.
	for name, data := range map[string]string{"Chart.yaml": "name: demo\n", "templates/nested/cm.yaml": "kind: ConfigMap\n"} {
		if err := os.WriteFile(filepath.Join(src, filepath.FromSlash(name)), []byte(data), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := CopyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(dst, "templates", "nested", "cm.yaml")
	if b, err := os.ReadFile(got); err != nil || string(b) != "kind: ConfigMap\n" {
		t.Errorf("%s: %q, %v", got, b, err)
	}
	if err := os.WriteFile(got, []byte("changed"), 0o644); err != nil {
		t.Errorf("the copy is not writable: %v", err)
	}

	t.Run("a symbolic link is refused", func(t *testing.T) {
		if err := os.Symlink("Chart.yaml", filepath.Join(src, "link.yaml")); err != nil {
			t.Skip(err)
		}
		err := CopyTree(src, filepath.Join(t.TempDir(), "copy"))
		if err == nil || !strings.Contains(err.Error(), "link.yaml: not a regular file") {
			t.Errorf("err = %v, want one naming link.yaml", err)
		}
	})
}
