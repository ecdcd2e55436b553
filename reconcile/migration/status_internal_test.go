package migration

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

func TestWrittenIn(t *testing.T) {
	at := func(s int) *metav1.Time { t := metav1.NewTime(time.Unix(int64(1_800_000_000+s), 0)); return &t }
	entry := func(manager, apiVersion, sub string, s int) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, APIVersion: apiVersion, Subresource: sub, Time: at(s), Operation: metav1.ManagedFieldsOperationApply}
	}
	tests := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		want    string
	}{
		{name: "no entry"},
		{name: "one writer", managed: []metav1.ManagedFieldsEntry{entry("kubectl", "app.example.com/v1", "", 1)}, want: "v1"},
		{name: "the newest writer", managed: []metav1.ManagedFieldsEntry{
			entry("argocd-controller", "app.example.com/v2", "", 5), entry("kubectl", "app.example.com/v1", "", 3)}, want: "v2"},
		{name: "the later of two at the same time", managed: []metav1.ManagedFieldsEntry{
			entry("a", "app.example.com/v1", "", 3), entry("b", "app.example.com/v2", "", 3)}, want: "v2"},
		// What stencil writes is not a client's write.
		{name: "status is stencil's", managed: []metav1.ManagedFieldsEntry{
			entry("kubectl", "app.example.com/v1", "", 1), entry("stencil", "app.example.com/v2", "status", 9)}, want: "v1"},
		{name: "stencil's metadata and the migration's rewrites", managed: []metav1.ManagedFieldsEntry{
			entry("kubectl", "app.example.com/v1", "", 1), entry("stencil", "app.example.com/v2", "", 9), entry(FieldManager, "app.example.com/v2", "", 10)}, want: "v1"},
		{name: "only stencil's", managed: []metav1.ManagedFieldsEntry{entry("stencil", "app.example.com/v2", "", 9)}},
		{name: "an apiVersion that does not parse", managed: []metav1.ManagedFieldsEntry{entry("kubectl", "a/b/c", "", 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writtenIn(tt.managed); got != tt.want {
				t.Errorf("writtenIn = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCountsList(t *testing.T) {
	c := counts{}
	for _, v := range []string{"v2", "v1", "v2", "v10"} {
		obj := &metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", APIVersion: "app.example.com/" + v}}}
		c.add(obj)
	}
	c.add(&metav1.ObjectMeta{}) // no writer: not counted
	want := []v1alpha1.VersionCount{{Version: "v1", Instances: 1}, {Version: "v10", Instances: 1}, {Version: "v2", Instances: 2}}
	if diff := cmp.Diff(want, c.list()); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}

func TestServedVersions(t *testing.T) {
	off := false
	tests := []struct {
		name string
		api  *v1alpha1.BundleAPI
		want []string
	}{
		{name: "no api"},
		{name: "the single version, defaulted", api: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "App"}, want: []string{"v1alpha1"}},
		{name: "the single version", api: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "App", Version: "v1"}, want: []string{"v1"}},
		{name: "versions, one not served", api: &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "App",
			Versions: []v1alpha1.APIVersion{{Name: "v1", Served: &off}, {Name: "v2", Storage: true}, {Name: "v3"}}}, want: []string{"v2", "v3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, servedVersions(tt.api)); diff != "" {
				t.Errorf("servedVersions (-want +got):\n%s", diff)
			}
		})
	}
}
