package templates_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// tarEntry is an entry of a test archive.
type tarEntry struct {
	name, body, link string
	size             int64 // a body of size zero bytes when body is ""
	typ              byte
}

func chartArchive(t *testing.T, entries ...tarEntry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.body))
		if e.size > 0 {
			size = e.size
		}
		if typ != tar.TypeReg {
			size = 0
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Size: size, Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			zeros := make([]byte, 1<<20)
			for left := e.size; left > 0; left -= int64(len(zeros)) {
				if _, err := tw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func loadWithArchive(archive string) (*templates.Bundle, error) {
	return templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"charts/sub-1.tgz":  archive,
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
	}}})
}

// TestChartArchives: an archive is unpacked in memory, archives inside
// it too; a hostile one is refused with the reason.
func TestChartArchives(t *testing.T) {
	chartYAML := tarEntry{name: "sub/Chart.yaml", body: "apiVersion: v2\nname: sub\nversion: 1.0.0\n"}
	cm := tarEntry{name: "sub/templates/cm.yaml", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-{{ .Values.x }}\n"}
	t.Run("nested archives render", func(t *testing.T) {
		inner := chartArchive(t, tarEntry{name: "inner/Chart.yaml", body: "apiVersion: v2\nname: inner\nversion: 1.0.0\n"},
			tarEntry{name: "inner/templates/cm.yaml", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inner\n"})
		b, err := loadWithArchive(chartArchive(t, tarEntry{name: "sub/", typ: tar.TypeDir}, chartYAML, cm,
			tarEntry{name: "sub/values.yaml", body: "x: one\n"}, tarEntry{name: "sub/charts/inner-1.0.0.tgz", body: inner}))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := templates.Render(b, templates.Input{Composition: web})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.GetName())
		}
		if got := strings.Join(names, ","); got != "c,sub-one,inner" {
			t.Errorf("rendered %s, want c,sub-one,inner", got)
		}
	})
	tests := []struct {
		name    string
		entries []tarEntry
		want    string
		tooBig  bool
	}{
		{"parent folder", []tarEntry{chartYAML, {name: "sub/../../etc/passwd", body: "x"}}, "is not a path inside the chart's folder", false},
		{"dot dot first", []tarEntry{{name: "../sub/Chart.yaml", body: "x"}}, "is not a path inside the chart's folder", false},
		{"absolute", []tarEntry{{name: "/sub/Chart.yaml", body: "x"}}, "is not a path inside the chart's folder", false},
		{"two charts", []tarEntry{chartYAML, {name: "other/Chart.yaml", body: "x"}}, "outside the chart's folder sub/", false},
		{"symbolic link", []tarEntry{chartYAML, {name: "sub/values.yaml", link: "/etc/passwd", typ: tar.TypeSymlink}}, "is not a regular file", false},
		{"hard link", []tarEntry{chartYAML, {name: "sub/values.yaml", link: "sub/Chart.yaml", typ: tar.TypeLink}}, "is not a regular file", false},
		{"huge file", []tarEntry{chartYAML, {name: "sub/big", size: templates.MaxArchiveBytes + 1}}, fmt.Sprintf("unpacks to more than %d bytes", templates.MaxArchiveBytes), true},
		{"too many files", manyFiles(templates.MaxArchiveFiles + 1), fmt.Sprintf("more than %d files", templates.MaxArchiveFiles), true},
		{"not gzip", nil, "not gzip", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			archive := "plain text"
			if tt.entries != nil {
				archive = chartArchive(t, tt.entries...)
			}
			_, err := loadWithArchive(archive)
			var re *templates.RenderError
			if !errors.As(err, &re) || re.File != "charts/sub-1.tgz" || !strings.Contains(re.Msg, tt.want) {
				t.Fatalf("err = %v, want a RenderError of charts/sub-1.tgz saying %q", err, tt.want)
			}
			if got := re.Reason == templates.ReasonTooLarge; got != tt.tooBig {
				t.Errorf("Reason = %q, want ReasonTooLarge %v", re.Reason, tt.tooBig)
			}
		})
	}
}

func manyFiles(n int) []tarEntry {
	out := make([]tarEntry, n)
	for i := range out {
		out[i] = tarEntry{name: fmt.Sprintf("sub/f%d", i)}
	}
	return out
}
