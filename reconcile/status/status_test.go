package status_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// configMap is ConfigMap name of namespace team, labelled part-of set (""
// none) and, with managed, carrying stencil's managed fields.
func configMap(name, set string, managed bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"token": "t0p-s3cret"}}}
	u.SetNamespace("team")
	u.SetName(name)
	u.SetUID(types.UID("uid-" + name))
	u.SetAnnotations(map[string]string{outputs.AnnotationID: name})
	if set != "" {
		u.SetLabels(map[string]string{applyset.LabelPartOf: set})
	}
	if managed {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: applyset.FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}})
	}
	return u
}

// TestObserveOnlyTheSetsMembers (issue 29 item 4): the status of a set
// reports, at a planned object's name, the set's own member only: an
// object of another set, one of nobody's, a copy of the set's label on
// someone else's object, and one with the label and a field of stencil's
// field manager that the set's record does not name (issue 37: anyone who
// may patch it can write both) are "not a member of this set", with none
// of their state, and give the Bundle's outputs nothing.
func TestObserveOnlyTheSetsMembers(t *testing.T) {
	const id = "applyset-ours-v1"
	reader := objects{}
	for _, o := range []*unstructured.Unstructured{configMap("ours", id, true), configMap("theirs", "applyset-theirs-v1", true),
		configMap("nobodys", "", false), configMap("copied-label", id, false), configMap("forged", id, true)} {
		reader[o.GetName()] = o
	}
	var planned []*unstructured.Unstructured
	for _, name := range []string{"ours", "theirs", "nobodys", "copied-label", "forged", "absent"} {
		planned = append(planned, configMap(name, id, false))
	}
	rec := applyset.NewRecord([]types.UID{"uid-ours"}, nil)
	members, lives := status.Observe(context.Background(), reader, id, rec, planned, nil, nil)
	want := map[string]string{"ours": "Current", "theirs": "Unknown", "nobodys": "Unknown", "copied-label": "Unknown", "forged": "Unknown", "absent": "NotFound"}
	for _, m := range members {
		if m.Status != want[m.Name] {
			t.Errorf("%s: status %s (%s), want %s", m.Name, m.Status, m.Message, want[m.Name])
		}
		if want[m.Name] == "Unknown" && m.Message != status.NotAMember {
			t.Errorf("%s: message %q, want %q", m.Name, m.Message, status.NotAMember)
		}
	}
	if _, ok := lives["ours"]; !ok || len(lives) != 1 {
		t.Errorf("outputs see %d objects (%v), want only the member ours", len(lives), keys(lives))
	}
}

// objects is a reader of the objects it holds, by name.
type objects map[string]*unstructured.Unstructured

func (o objects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	u, ok := o[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
	}
	u.DeepCopyInto(obj.(*unstructured.Unstructured))
	return nil
}

func (o objects) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
