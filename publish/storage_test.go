package publish_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/publish"
)

// crdOf is a CRD named widgets.example.com with versions (the first
// letter * marks the storage version, a trailing - one not served) and
// status.storedVersions stored.
func crdOf(versions []string, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"}}
	for _, v := range versions {
		storage := strings.HasPrefix(v, "*")
		served := !strings.HasSuffix(v, "-")
		v = strings.TrimSuffix(strings.TrimPrefix(v, "*"), "-")
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: served, Storage: storage})
	}
	crd.Status.StoredVersions = stored
	return crd
}

func TestCheckVersionRemoval(t *testing.T) {
	tests := []struct {
		name       string
		live, next *apiextensionsv1.CustomResourceDefinition
		// dropped is what the error names, nil when the removal passes.
		dropped []string
		// says are parts of the message.
		says []string
	}{
		// Passing: nothing stored is dropped.
		{name: "no live CRD yet", next: crdOf([]string{"*v1"})},
		{name: "same versions", live: crdOf([]string{"*v1"}, "v1"), next: crdOf([]string{"*v1"})},
		{name: "a version added as storage", live: crdOf([]string{"*v1"}, "v1"), next: crdOf([]string{"v1", "*v2"})},
		{name: "a migrated version dropped", live: crdOf([]string{"v1", "*v2"}, "v2"), next: crdOf([]string{"*v2"})},
		{name: "a stored version no longer served is kept", live: crdOf([]string{"v1", "*v2"}, "v1", "v2"), next: crdOf([]string{"v1-", "*v2"})},
		{name: "a version never stored dropped", live: crdOf([]string{"*v1", "v2"}, "v1"), next: crdOf([]string{"*v1"})},

		// Refused: a stored version leaves spec.versions.
		{name: "a version dropped while still stored", live: crdOf([]string{"v1", "*v2"}, "v1", "v2"), next: crdOf([]string{"*v2"}),
			dropped: []string{"v1"}, says: []string{"version v1 is still in status.storedVersions of CustomResourceDefinition widgets.example.com", "storage migration to v2 must finish first"}},
		{name: "the single version renamed", live: crdOf([]string{"*v1"}, "v1"), next: crdOf([]string{"*v2"}),
			dropped: []string{"v1"}, says: []string{"(v1 is its storage version)", "publish the new version beside it"}},
		{name: "two stored versions dropped", live: crdOf([]string{"v1", "v2", "*v3"}, "v1", "v2", "v3"), next: crdOf([]string{"*v3"}),
			dropped: []string{"v1", "v2"}, says: []string{"versions v1, v2 are still in status.storedVersions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := publish.CheckVersionRemoval(tt.live, tt.next)
			if tt.dropped == nil {
				if err != nil {
					t.Fatalf("CheckVersionRemoval: %v; want nil", err)
				}
				return
			}
			var stored *publish.VersionStillStoredError
			if !errors.As(err, &stored) {
				t.Fatalf("CheckVersionRemoval: %v; want a *VersionStillStoredError", err)
			}
			if diff := cmp.Diff(tt.dropped, stored.Versions); diff != "" {
				t.Errorf("dropped versions (-want +got):\n%s", diff)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q: want it to say %q", err.Error(), s)
				}
			}
		})
	}
}
