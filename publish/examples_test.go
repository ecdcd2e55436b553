package publish_test

import (
	"os"
	"path/filepath"
	"testing"

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
