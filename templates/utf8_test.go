package templates_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// TestBundleFilesAreUTF8 (issue 30 item 7): a file of a bundle holding a
// byte that is not UTF-8 is refused when the bundle is loaded, naming the
// file, the line and the column (a render worker receives the files as
// JSON, which would turn it into U+FFFD unseen), in a template, a helper,
// values.yaml, Chart.yaml, a subchart's crds/ and a file of a chart
// archive alike: every file stencil reads as text (TestBinaryFiles: the
// others are .Files, any bytes).
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
		{"Chart.yaml", map[string]string{"templates/cm.yaml": cm, "Chart.yaml": "apiVersion: v2\nname: d\xe9mo\nversion: 0.1.0\n"}, "Chart.yaml:2: is not valid UTF-8: byte 0xe9 at column 8"},
		{"a subchart's crds/", map[string]string{"templates/cm.yaml": cm, "Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n", "charts/sub/crds/crd.yaml": "kind: CustomResourceDefinition\n# \xff\n"}, "charts/sub/crds/crd.yaml:2: is not valid UTF-8: byte 0xff at column 3"},
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

// TestBinaryFiles: a file stencil does not read as text (one of .Files)
// may hold any bytes, as in Helm: kube-prometheus-stack's crds subchart
// sends files/crds.bz2 as a ConfigMap's binaryData with .Files.Get and
// b64enc. Its bytes reach the template unchanged, in a subchart too; a
// template that writes them into the output raw is refused by the output
// check, naming the template.
func TestBinaryFiles(t *testing.T) {
	blob := "BZh91AY&SY\xff\xfe\x00\x80\xe9"
	want := base64.StdEncoding.EncodeToString([]byte(blob))
	chartYAML := "apiVersion: v2\nname: %s\nversion: 1.0.0\n"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\nbinaryData:\n  blob: {{ .Files.Get \"files/blob.bz2\" | b64enc }}\n  size: {{ .Files.GetBytes \"files/blob.bz2\" | len | toString | b64enc }}\n"
	files := map[string]string{
		"Chart.yaml":                   fmt.Sprintf(chartYAML, "top"),
		"files/blob.bz2":               blob,
		"templates/cm.yaml":            fmt.Sprintf(cm, "top"),
		"charts/sub/Chart.yaml":        fmt.Sprintf(chartYAML, "sub"),
		"charts/sub/files/blob.bz2":    blob,
		"charts/sub/templates/cm.yaml": fmt.Sprintf(cm, "sub"),
	}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: templates.CompositionInfo{Name: "demo", Namespace: "ns"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2", len(objs))
	}
	n := base64.StdEncoding.EncodeToString([]byte(fmt.Sprint(len(blob))))
	for _, o := range objs {
		data, _, _ := unstructured.NestedStringMap(o.Object, "binaryData")
		if data["blob"] != want || data["size"] != n {
			t.Errorf("%s: binaryData %v, want blob %s and size %s", o.GetName(), data, want, n)
		}
	}

	files["templates/raw.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\ndata:\n  blob: |\n{{ .Files.Get \"files/blob.bz2\" | indent 4 }}\n"
	b, err = templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = templates.Render(b, templates.Input{Composition: templates.CompositionInfo{Name: "demo", Namespace: "ns"}})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "templates/raw.yaml" || !strings.Contains(re.Msg, "not valid UTF-8") {
		t.Errorf("raw bytes in the output: %v, want a RenderError of templates/raw.yaml saying it is not valid UTF-8", err)
	}
}
