package e2e_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// exampleBundles loads every bundle folder as `stencil bundle pack` does
// (stencil.yaml's api included).
func exampleBundles(t *testing.T, dir string) []*v1alpha1.Bundle {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.Bundle
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := templates.Load(os.DirFS(filepath.Join(dir, e.Name())), templates.LoadOptions{Name: e.Name()})
		if err != nil {
			t.Fatalf("load bundle %s: %v", e.Name(), err)
		}
		out = append(out, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: e.Name()}, Spec: b.Spec()})
	}
	return out
}

// exampleObjects reads every object of the YAML files of dir, in the
// namespace kubectl would put them in (default, as the local cluster's
// kubeconfig says).
func exampleObjects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s (%v)", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			out = append(out, objectOf(t, string(doc)))
		}
	}
	return out
}

// objectOf parses one object, in the default namespace unless it names one.
func objectOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("parse %q: %v", doc, err)
	}
	if u.GetKind() == "" || u.GetName() == "" {
		t.Fatalf("no kind or name in %q", doc)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	return u
}

// instanceNamed returns the object named name among objs.
func instanceNamed(t *testing.T, objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetName() == name {
			return o.DeepCopy()
		}
	}
	t.Fatalf("no example named %s", name)
	return nil
}

// editFile returns the file's text with each old string (which must be
// there) replaced by the new one that follows it.
func editFile(t *testing.T, path string, oldNew ...string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s: no %q to replace", path, oldNew[i])
		}
		s = strings.Replace(s, oldNew[i], oldNew[i+1], 1)
	}
	return s
}

// renamed returns doc, a single object, under another name.
func renamed(t *testing.T, doc, name string) string {
	t.Helper()
	u := objectOf(t, doc)
	old := "  name: " + u.GetName() + "\n"
	if !strings.Contains(doc, old) {
		t.Fatalf("no %q in %q", old, doc)
	}
	return strings.Replace(doc, old, "  name: "+name+"\n", 1)
}
