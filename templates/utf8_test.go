package templates_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestBundleFilesAreUTF8 (issue 30 item 7): a file of a bundle holding a
// byte that is not UTF-8 is refused when the bundle is loaded, naming the
// file, the line and the column (a render worker receives the files as
// JSON, which would turn it into U+FFFD unseen), in a template, a helper,
// values.yaml, a plain file and a file of a chart archive alike.
func TestBundleFilesAreUTF8(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"template", map[string]string{"templates/cm.yaml": cm + "data:\n  a: caf\xe9\n"}, "templates/cm.yaml:6: is not valid UTF-8: byte 0xe9 at column 9"},
		{"helper", map[string]string{"templates/cm.yaml": cm, "templates/_h.tpl": "{{ define \"x\" }}\xff{{ end }}"}, "templates/_h.tpl:1: is not valid UTF-8: byte 0xff at column 17"},
		{"values", map[string]string{"templates/cm.yaml": cm, "values.yaml": "a: 1\nb: \xc3\n"}, "values.yaml:2: is not valid UTF-8: byte 0xc3 at column 4"},
		{"plain file", map[string]string{"templates/cm.yaml": cm, "files/logo.png": "\x89PNG\r\n"}, "files/logo.png:1: is not valid UTF-8: byte 0x89 at column 1"},
		{"in an archive", map[string]string{"templates/cm.yaml": cm, "Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
			"charts/sub-1.tgz": chartArchive(t, tarEntry{name: "sub/Chart.yaml", body: "apiVersion: v2\nname: sub\nversion: 1.0.0\n"},
				tarEntry{name: "sub/templates/cm.yaml", body: cm + "data:\n  a: \xe9\n"})}, "charts/sub/templates/cm.yaml:6: is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: tt.files}})
			var re *templates.RenderError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("load: %v, want a RenderError with %q", err, tt.want)
			}
		})
	}
}

// TestArchivesUnpackedAtLoad: a bundle's chart archives are unpacked when
// it is loaded, so its spec (what `stencil bundle pack` writes and a
// render worker receives) holds text files only, and a folder with an
// archive has the revision of its packed Bundle.
func TestArchivesUnpackedAtLoad(t *testing.T) {
	archive := chartArchive(t, tarEntry{name: "sub/Chart.yaml", body: "apiVersion: v2\nname: sub\nversion: 1.0.0\n"},
		tarEntry{name: "sub/templates/cm.yaml", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub\n"})
	b, err := loadWithArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	files := b.Spec().Files
	if _, ok := files["charts/sub-1.tgz"]; ok {
		t.Errorf("the spec still holds the archive")
	}
	if _, ok := files["charts/sub/templates/cm.yaml"]; !ok {
		t.Errorf("the spec lacks the archive's files: %v", files)
	}
	packed, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: b.Spec()})
	if err != nil {
		t.Fatal(err)
	}
	if packed.Revision() != b.Revision() {
		t.Errorf("revision %s packed, %s with the archive", packed.Revision(), b.Revision())
	}
}
