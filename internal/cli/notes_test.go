package cli_test

import (
	"strings"
	"testing"
)

// TestRenderNotes: render --notes prints each parent's notes (the
// chart's templates/NOTES.txt, whole) on stderr, after its objects, so
// stdout stays the objects alone and pipes into kubectl apply; without
// --notes they are not printed. A failing NOTES.txt fails the render
// naming its file and line, and prints no object.
func TestRenderNotes(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n",
		"templates/NOTES.txt": "\n{{ .Release.Name }} is installed.\nVisit https://{{ .Values.host | default \"shop.example\" }}/\n",
	}
	dir := writeBundle(t, files)
	out, errOut, code := stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "app", "-n", "team", "--notes")
	if code != 0 {
		t.Fatalf("render --notes: exit %d: %s", code, errOut)
	}
	if objs := renderedObjects(t, out); len(objs) != 1 || objs[0].GetName() != "cfg" || strings.Contains(out, "NOTES") {
		t.Errorf("stdout:\n%s\nwant the ConfigMap alone", out)
	}
	if want := "NOTES (Composition team/app):\napp is installed.\nVisit https://shop.example/\n"; !strings.Contains(errOut, want) {
		t.Errorf("stderr:\n%s\nwant it to hold:\n%s", errOut, want)
	}
	if _, errOut, code := stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "app", "-n", "team"); code != 0 || strings.Contains(errOut, "NOTES") {
		t.Errorf("render without --notes: exit %d, stderr:\n%s\nwant no notes", code, errOut)
	}

	files["templates/NOTES.txt"] = "{{ .Release.Name }} is installed.\n{{ required \"host is required\" .Values.host }}\n"
	dir = writeBundle(t, files)
	out, errOut, code = stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "app", "-n", "team", "--notes")
	if code == 0 || out != "" || !strings.Contains(errOut, "templates/NOTES.txt:2") || !strings.Contains(errOut, "host is required") {
		t.Errorf("a failing NOTES.txt: exit %d, stdout %q, stderr:\n%s\nwant a failure naming templates/NOTES.txt:2", code, out, errOut)
	}
}
