package publish_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

// TestBundleFolders: the CRD of every bundle folder that publishes a kind
// (the examples and this package's testdata) builds and passes the API
// server's checks, loaded as `stencil bundle pack` loads it.
func TestBundleFolders(t *testing.T) {
	var dirs []string
	for _, root := range []string{"../examples/bundles", "testdata/bundles"} {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	published := 0
	for _, dir := range dirs {
		b, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: filepath.Base(dir)})
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		spec := b.Spec()
		if spec.API == nil {
			continue
		}
		published++
		t.Run(dir, func(t *testing.T) {
			crd, err := publish.CRD(b.Name(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if crd.Name != publish.CRDName(*spec.API) {
				t.Errorf("CRD name %s, want %s", crd.Name, publish.CRDName(*spec.API))
			}
			if s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]; spec.Schema == nil && spec.Files["values.schema.json"] == "" {
				if s.XPreserveUnknownFields == nil {
					t.Error("a bundle without a schema must publish a spec that keeps any field")
				}
			} else if len(s.Properties) == 0 {
				t.Error("the values schema's properties did not reach the CRD")
			}
		})
	}
	if published < 2 {
		t.Errorf("%d bundle folders publish a kind, want at least this package's two testdata bundles", published)
	}
}

// TestExampleRBAC: config/rbac/aggregate.yaml grants the controller, for
// every kind an example bundle publishes, exactly the ClusterRole
// ClusterRoles (and so `stencil bundle rbac`) gives it.
func TestExampleRBAC(t *testing.T) {
	data, err := os.ReadFile("../config/rbac/aggregate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]*rbacv1.ClusterRole{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(doc, role); err != nil {
			t.Fatal(err)
		}
		installed[role.Name] = role
	}
	entries, err := os.ReadDir("../examples/bundles")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := templates.Load(os.DirFS(filepath.Join("../examples/bundles", e.Name())), templates.LoadOptions{Name: e.Name()})
		if err != nil || b.Spec().API == nil {
			continue // TestBundleFolders reports load errors
		}
		want := publish.ClusterRoles(b.Name(), *b.Spec().API)[0]
		got, ok := installed[want.Name]
		if !ok {
			t.Errorf("config/rbac/aggregate.yaml lacks ClusterRole %s (stencil bundle rbac examples/bundles/%s)", want.Name, e.Name())
			continue
		}
		if diff := cmp.Diff(want.Labels, got.Labels); diff != "" {
			t.Errorf("%s labels (-stencil bundle rbac +aggregate.yaml):\n%s", want.Name, diff)
		}
		if diff := cmp.Diff(want.Rules, got.Rules); diff != "" {
			t.Errorf("%s rules (-stencil bundle rbac +aggregate.yaml):\n%s", want.Name, diff)
		}
	}
}
