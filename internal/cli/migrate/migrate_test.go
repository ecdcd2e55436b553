package migrate_test

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/internal/cli/migrate"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// appService is a Target for AppService v1 → v2 written by hand (the
// engine's converter is tested in publish/conversion; these tests are
// about the editing): spec.size moves to spec.replicas, spec.ports turns
// from a list of {name, port} into a map name → port. Compositions of
// appservice with a size get it renamed to replicas.
func appService() *migrate.Target {
	return &migrate.Target{
		Bundle: "appservice",
		Kind:   schema.GroupKind{Group: "app.example.com", Kind: "AppService"},
		To:     "v2",
		Served: []string{"v1", "v2"},
		Convert: func(obj map[string]any, to string) (map[string]any, error) {
			out := map[string]any{}
			for k, v := range obj {
				out[k] = v
			}
			out["apiVersion"] = "app.example.com/" + to
			spec := map[string]any{}
			for k, v := range obj["spec"].(map[string]any) {
				spec[k] = v
			}
			if v, ok := spec["size"]; ok {
				spec["replicas"] = v
				delete(spec, "size")
			}
			if list, ok := spec["ports"].([]any); ok {
				m := map[string]any{}
				for _, p := range list {
					p := p.(map[string]any)
					m[p["name"].(string)] = p["port"]
				}
				spec["ports"] = m
			}
			out["spec"] = spec
			return out, nil
		},
		Values: func(values map[string]any) (map[string]any, []string, error) {
			v, ok := values["size"]
			if !ok {
				return values, nil, nil
			}
			out := map[string]any{"replicas": v}
			for k, v := range values {
				if k != "size" {
					out[k] = v
				}
			}
			return out, []string{"size-to-replicas"}, nil
		},
	}
}

// copyRepo copies testdata/repo into a temporary folder and returns it.
func copyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := os.CopyFS(dir, os.DirFS("testdata/repo"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// files reads every file under dir, by slash path.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrateGolden: a repository with comments, odd indentation, flow
// styles and quoting is rewritten byte for byte as the golden files say
// (testdata/golden holds the files that change; the others stay as they
// were), and what changed is reported per document.
func TestMigrateGolden(t *testing.T) {
	dir := copyRepo(t)
	before := files(t, dir)
	changes, err := migrate.Run([]string{dir}, true, appService(), false)
	if err != nil {
		t.Fatal(err)
	}
	var report []string
	for _, c := range changes {
		report = append(report, strings.TrimPrefix(c.String(), dir+string(filepath.Separator)))
	}
	wantReport := []string{
		"team-a/apps.yaml: AppService team-a/web: app.example.com/v1 → v2 (spec.size → spec.replicas; changed spec.ports)",
		"team-a/apps.yaml: Composition team-a/worker: values → valuesMigrations size-to-replicas (spec.values.size → spec.values.replicas)",
		"team-a/nested/deep.yml: AppService deep: app.example.com/v1 → v2 (spec.size → spec.replicas; changed spec.ports)",
	}
	if diff := cmp.Diff(wantReport, report); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	after := files(t, dir)
	for name, got := range after {
		golden := filepath.Join("testdata", "golden", name)
		if *update && got != before[name] {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if os.IsNotExist(err) {
			want, err = []byte(before[name]), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// TestMigrateKeepsOtherDocuments: the documents of a file that need no
// change are written back byte for byte, separators included.
func TestMigrateKeepsOtherDocuments(t *testing.T) {
	dir := copyRepo(t)
	name := filepath.Join(dir, "team-a", "apps.yaml")
	before, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Run([]string{name}, false, appService(), false); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	b, a := split(before), split(after)
	if len(a) != len(b) {
		t.Fatalf("%d documents after, %d before", len(a), len(b))
	}
	for i, changed := range []bool{false, true, false, true, false} {
		if same := b[i] == a[i]; same == changed {
			t.Errorf("document %d: changed %v, want %v:\n%s", i+1, !same, changed, a[i])
		}
	}
}

// split splits a file at its separator lines, keeping them.
func split(data []byte) []string {
	var docs []string
	for i, d := range bytes.Split(data, []byte("\n---")) {
		if i > 0 {
			d = append([]byte("---"), d...)
		}
		docs = append(docs, string(d))
	}
	return docs
}

// TestMigrateRecursive: without -R only the folder's own files are read.
func TestMigrateRecursive(t *testing.T) {
	dir := copyRepo(t)
	changes, err := migrate.Run([]string{filepath.Join(dir, "team-a")}, false, appService(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if strings.Contains(c.File, "nested") {
			t.Errorf("without -R: %s", c)
		}
	}
	if len(changes) != 2 {
		t.Errorf("%d changes, want the 2 of team-a/apps.yaml", len(changes))
	}
}

// TestMigrateCheck: --check reports what would change and writes
// nothing; a repository already migrated reports nothing.
func TestMigrateCheck(t *testing.T) {
	dir := copyRepo(t)
	before := files(t, dir)
	changes, err := migrate.Run([]string{dir}, true, appService(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 3 {
		t.Errorf("%d changes, want 3", len(changes))
	}
	if diff := cmp.Diff(before, files(t, dir)); diff != "" {
		t.Errorf("--check wrote (-before +after):\n%s", diff)
	}
	if _, err := migrate.Run([]string{dir}, true, appService(), false); err != nil {
		t.Fatal(err)
	}
	again, err := migrate.Run([]string{dir}, true, appService(), true)
	if err != nil || len(again) != 0 {
		t.Errorf("after the migration: %v, %v; want no change", again, err)
	}
}

// TestMigrateParseErrorWritesNothing: a file that does not parse is an
// error naming it and its line, and no file is written, not even those
// that planned well.
func TestMigrateParseErrorWritesNothing(t *testing.T) {
	dir := copyRepo(t)
	bad := filepath.Join(dir, "team-a", "zz-bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: ConfigMap\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   bad: indent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	_, err := migrate.Run([]string{dir}, true, appService(), false)
	if err == nil || !strings.Contains(err.Error(), "zz-bad.yaml: ") || !strings.Contains(err.Error(), "line 8") {
		t.Errorf("error %v, want one naming zz-bad.yaml and line 8", err)
	}
	if diff := cmp.Diff(before, files(t, dir)); diff != "" {
		t.Errorf("written despite the error (-before +after):\n%s", diff)
	}
}

// TestMigrateUnservedVersion: an instance in a version the Bundle does
// not serve is an error naming the versions it serves, and nothing is
// written.
func TestMigrateUnservedVersion(t *testing.T) {
	dir := copyRepo(t)
	name := filepath.Join(dir, "team-a", "old.yaml")
	if err := os.WriteFile(name, []byte("apiVersion: app.example.com/v0\nkind: AppService\nmetadata:\n  name: old\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	_, err := migrate.Run([]string{dir}, true, appService(), false)
	if err == nil || !strings.Contains(err.Error(), "old.yaml: line 1: AppService old: app.example.com/v0 is not a version Bundle appservice serves (it serves v1, v2)") {
		t.Errorf("error %v", err)
	}
	if diff := cmp.Diff(before, files(t, dir)); diff != "" {
		t.Errorf("written despite the error (-before +after):\n%s", diff)
	}
}

// TestMigrateLineEnds: a file with CRLF line ends and no final newline
// keeps both; a document of only comments is left as it is.
func TestMigrateLineEnds(t *testing.T) {
	name := filepath.Join(t.TempDir(), "crlf.yaml")
	in := "# only comments\r\n---\r\napiVersion: app.example.com/v1\r\nkind: AppService\r\nmetadata:\r\n  name: x   # keep\r\nspec:\r\n  size: 2\r\n  ports:\r\n  - name: http\r\n    port: 80"
	if err := os.WriteFile(name, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Run([]string{name}, false, appService(), false); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	want := "# only comments\r\n---\r\napiVersion: app.example.com/v2\r\nkind: AppService\r\nmetadata:\r\n  name: x   # keep\r\nspec:\r\n  replicas: 2\r\n  ports:\r\n    http: 80"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
