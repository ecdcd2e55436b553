package recall

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

func testBundle(name string, uid types.UID, generation int64) *v1alpha1.Bundle {
	return &v1alpha1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Generation: generation},
		Spec: v1alpha1.BundleSpec{Files: map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n",
		}},
	}
}

func TestBundleCache(t *testing.T) {
	t.Run("a Bundle is parsed once per generation", func(t *testing.T) {
		var c Bundles
		first, err := c.Load(testBundle("a", "uid-a", 1))
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := c.Load(testBundle("a", "uid-a", 1)); again != first {
			t.Error("the same generation was parsed again")
		}
		if next, _ := c.Load(testBundle("a", "uid-a", 2)); next == first {
			t.Error("a new generation was served from the cache")
		}
		if c.Len() != 1 {
			t.Errorf("%d Bundles kept, want 1", c.Len())
		}
	})
	t.Run("a Bundle replaced under its name is forgotten", func(t *testing.T) {
		var c Bundles
		old, _ := c.Load(testBundle("a", "uid-old", 1))
		if got, _ := c.Load(testBundle("a", "uid-new", 1)); got == old {
			t.Error("the deleted Bundle's parse served its successor")
		}
		if c.Len() != 1 {
			t.Errorf("%d Bundles kept, want 1", c.Len())
		}
	})
	t.Run("Bundles kept are bounded", func(t *testing.T) {
		var c Bundles
		for i := range MaxBundles + 10 {
			name := fmt.Sprintf("b%d", i)
			if _, err := c.Load(testBundle(name, types.UID(name), 1)); err != nil {
				t.Fatal(err)
			}
		}
		if c.Len() != MaxBundles {
			t.Errorf("%d Bundles kept, want %d", c.Len(), MaxBundles)
		}
	})
}

// TestBundleCacheSourceDigest: a Bundle with a source keeps its
// generation when a pull records another chart; the new digest is parsed
// again, with its own revision (issue 22 item 3).
func TestBundleCacheSourceDigest(t *testing.T) {
	pulled := func(digest, greeting string) *v1alpha1.Bundle {
		b := testBundle("src", "uid-src", 1)
		b.Spec.Source = &v1alpha1.BundleSource{OCI: "oci://r.example.com/charts/src:stable"}
		b.Spec.Files["values.yaml"] = "greeting: " + greeting + "\n"
		b.Status.Source = &v1alpha1.SourceStatus{Digest: digest}
		return b
	}
	var c Bundles
	first, err := c.Load(pulled("sha256:1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.Load(pulled("sha256:1", "hello")); again != first {
		t.Error("the same digest was parsed again")
	}
	next, err := c.Load(pulled("sha256:2", "bonjour"))
	if err != nil {
		t.Fatal(err)
	}
	if next == first || next.Revision() == first.Revision() {
		t.Errorf("a new digest was served from the cache (revision %s)", next.Revision())
	}
}
