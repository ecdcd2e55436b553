package applyset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestApplySetID(t *testing.T) {
	tests := []struct {
		name, namespace string
		gk              schema.GroupKind
		want            string
	}{
		// The vector kubectl's own tests use.
		{"my-set", "test", schema.GroupKind{Kind: "Secret"}, "applyset-0eFHV8ySqp7XoShsGvyWFQD3s96yqwHmzc4e0HR1dsY-v1"},
	}
	for _, tt := range tests {
		if got := ID(tt.name, tt.namespace, tt.gk); got != tt.want {
			t.Errorf("ID(%q, %q, %v) = %q, want %q", tt.name, tt.namespace, tt.gk, got, tt.want)
		}
	}
	a := ID("app", "ns", schema.GroupKind{Group: "stencil.dev", Kind: "Composition"})
	b := ID("app", "other", schema.GroupKind{Group: "stencil.dev", Kind: "Composition"})
	if a == b {
		t.Errorf("ids of parents in different Namespaces collide: %s", a)
	}
}

func TestInventoryAnnotations(t *testing.T) {
	got := ParseInventory(map[string]string{
		AnnotationGroupKinds: "Service,Deployment.apps, ConfigMap,Deployment.apps",
		AnnotationNamespaces: "b,a,,a",
	})
	gks, nss := got.Annotations()
	if diff := cmp.Diff("ConfigMap,Deployment.apps,Service", gks); diff != "" {
		t.Errorf("group-kinds (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("a,b", nss); diff != "" {
		t.Errorf("Namespaces (-want +got):\n%s", diff)
	}
	wider := got.Union(Inventory{GroupKinds: []schema.GroupKind{{Group: "batch", Kind: "Job"}}, Namespaces: []string{"c"}})
	gks, nss = wider.Normalize("a").Annotations()
	if gks != "ConfigMap,Deployment.apps,Job.batch,Service" || nss != "b,c" {
		t.Errorf("union = %q / %q", gks, nss)
	}
	if gk := ParseInventory(map[string]string{AnnotationGroupKinds: "Deployment.apps"}).GroupKinds[0]; gk != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Errorf("parsed %v", gk)
	}
}

// TestMetadataKeysAreKubectls: the parent's and the members' keys are the
// ones kubectl reads (k8s.io/kubectl pkg/cmd/apply/applyset.go), spelled
// out here rather than taken from the constants under test; an earlier
// stencil wrote "additional-Namespaces", which kubectl never reads.
func TestMetadataKeysAreKubectls(t *testing.T) {
	for got, want := range map[string]string{
		LabelApplySetID:      "applyset.kubernetes.io/id",
		LabelPartOf:          "applyset.kubernetes.io/part-of",
		AnnotationTooling:    "applyset.kubernetes.io/tooling",
		AnnotationGroupKinds: "applyset.kubernetes.io/contains-group-kinds",
		AnnotationNamespaces: "applyset.kubernetes.io/additional-namespaces",
	} {
		if got != want {
			t.Errorf("key %q, want kubectl's %q", got, want)
		}
	}
}

// TestMisspelledNamespacesKey: the namespaces an earlier stencil recorded
// under its misspelled key stay part of the inventory, and such a parent
// has its annotations written again.
func TestMisspelledNamespacesKey(t *testing.T) {
	old := map[string]string{AnnotationGroupKinds: "ConfigMap", annotationNamespacesMisspelled: "b"}
	if got := ParseInventory(old).Namespaces; !cmp.Equal(got, []string{"b"}) {
		t.Errorf("namespaces %v, want [b]", got)
	}
	for _, tt := range []struct {
		annotations map[string]string
		want        bool
	}{
		{old, true},
		{map[string]string{AnnotationGroupKinds: "ConfigMap"}, true},
		{map[string]string{AnnotationGroupKinds: "ConfigMap", AnnotationNamespaces: ""}, false},
		{map[string]string{AnnotationNamespaces: "b", annotationNamespacesMisspelled: "b"}, true},
	} {
		if got := NeedsRewrite(tt.annotations); got != tt.want {
			t.Errorf("NeedsRewrite(%v) = %v, want %v", tt.annotations, got, tt.want)
		}
	}
}
