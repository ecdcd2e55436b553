package published

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestTakeFields: what recordAsApplied moves into stencil's Apply entry,
// case by case.
func TestTakeFields(t *testing.T) {
	fields := metav1.NewFieldsV1
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sub, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "apiextensions.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: fields(raw)}
	}
	const (
		stencil = applyset.FieldManager
		update  = metav1.ManagedFieldsOperationUpdate
		apply   = metav1.ManagedFieldsOperationApply
		spec    = `{"f:spec":{"f:group":{},"f:names":{"f:shortNames":{}}}}`
		status  = `{"f:status":{"f:acceptedNames":{}}}`
	)
	admins := `{"f:metadata":{"f:annotations":{".":{},"f:api-approved.kubernetes.io":{}},"f:labels":{".":{},"f:stencil.dev/bundle":{}}},` +
		`"f:spec":{"f:group":{},"f:names":{"f:shortNames":{}}}}`
	adminsMeta := `{"f:metadata":{"f:annotations":{".":{},"f:api-approved.kubernetes.io":{}},"f:labels":{".":{},"f:stencil.dev/bundle":{}}}}`
	tests := []struct {
		name    string
		in      []metav1.ManagedFieldsEntry
		want    []metav1.ManagedFieldsEntry
		changed bool
	}{
		{"created by stencil: its fields become applied",
			[]metav1.ManagedFieldsEntry{entry(stencil, update, "", spec), entry("kube-apiserver", update, "status", status)},
			[]metav1.ManagedFieldsEntry{entry("kube-apiserver", update, "status", status), entry(stencil, apply, "", spec)}, true},
		{"created and applied by stencil: merged into the Apply entry",
			[]metav1.ManagedFieldsEntry{entry(stencil, update, "", `{"f:spec":{"f:group":{}}}`), entry(stencil, apply, "", `{"f:spec":{"f:names":{"f:shortNames":{}}}}`)},
			[]metav1.ManagedFieldsEntry{entry(stencil, apply, "", spec)}, true},
		{"made by a cluster admin: stencil takes its spec, the admin keeps its metadata",
			[]metav1.ManagedFieldsEntry{entry("kubectl-create", update, "", admins), entry("kube-apiserver", update, "status", status)},
			[]metav1.ManagedFieldsEntry{entry("kubectl-create", update, "", adminsMeta), entry("kube-apiserver", update, "status", status), entry(stencil, apply, "", spec)}, true},
		{"already applied by stencil: another manager's spec stays its own",
			[]metav1.ManagedFieldsEntry{entry(stencil, apply, "", `{"f:spec":{"f:group":{}}}`), entry("kubectl-edit", update, "", `{"f:spec":{"f:names":{"f:shortNames":{}}}}`)},
			nil, false},
	}
	for _, tt := range tests {
		got, changed, err := takeFields(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if changed != tt.changed {
			t.Errorf("%s: changed = %v, want %v", tt.name, changed, tt.changed)
		}
		if !tt.changed {
			continue
		}
		for i := range got {
			got[i].Time = nil
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: managed fields (-want +got):\n%s", tt.name, diff)
		}
	}
}
