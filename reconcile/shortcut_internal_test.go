package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/reconcile/status"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/recall"
)

func deploymentObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "ns", "resourceVersion": "10", "generation": int64(1),
			"labels": map[string]any{applyset.LabelPartOf: "applyset-x-v1"},
			"managedFields": []any{
				map[string]any{"manager": "stencil", "operation": "Apply", "time": "2026-01-01T00:00:00Z", "fieldsV1": map[string]any{"f:spec": map[string]any{}}},
				map[string]any{"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "2026-01-01T00:00:00Z"},
			},
		},
		"spec":   map[string]any{"replicas": int64(1)},
		"status": map[string]any{"readyReplicas": int64(0)},
	}}
}

// TestFingerprint: a change of status alone (with its resourceVersion and
// the status manager's entry) keeps the fingerprint; any other change does
// not. The object itself is never modified.
func TestFingerprint(t *testing.T) {
	base := recall.Fingerprint(deploymentObject())
	for _, tt := range []struct {
		name   string
		change func(u *unstructured.Unstructured)
		same   bool
	}{
		{"status", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(1), "status", "readyReplicas")
			u.SetResourceVersion("11")
		}, true},
		{"status manager's entry", func(u *unstructured.Unstructured) {
			mf := u.Object["metadata"].(map[string]any)["managedFields"].([]any)
			mf[1].(map[string]any)["time"] = "2026-02-02T00:00:00Z"
			mf[1].(map[string]any)["fieldsV1"] = map[string]any{"f:status": map[string]any{}}
		}, true},
		{"an apply's timestamp alone", func(u *unstructured.Unstructured) {
			u.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["time"] = "2026-02-02T00:00:00Z"
		}, true},
		{"spec", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
		}, false},
		{"label", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{applyset.LabelPartOf: "applyset-x-v1", "x": "y"})
		}, false},
		{"finalizer", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"example.com/hold"}) }, false},
		{"another manager's fields", func(u *unstructured.Unstructured) {
			mf := u.Object["metadata"].(map[string]any)["managedFields"].([]any)
			u.Object["metadata"].(map[string]any)["managedFields"] = append(mf, map[string]any{"manager": "kubectl", "operation": "Apply"})
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := deploymentObject()
			tt.change(u)
			before := u.DeepCopy()
			if got := recall.Fingerprint(u) == base; got != tt.same {
				t.Errorf("fingerprint unchanged = %v, want %v", got, tt.same)
			}
			if !reflect.DeepEqual(before.Object, u.Object) {
				t.Errorf("fingerprint modified the object")
			}
		})
	}
}

// TestKeepTransitionTimes: a condition built afresh keeps its last
// transition time while its status stays, and takes a new one when the
// status changes.
func TestKeepTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	old := []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: then},
		{Type: v1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, LastTransitionTime: then},
	}
	st := v1alpha1.CompositionStatus{}
	status.SetReconciling(&st, 2, v1alpha1.ReasonProgressing, "waiting")
	status.KeepTransitionTimes(&st, old)
	for _, c := range st.Conditions {
		if !c.LastTransitionTime.Equal(&then) {
			t.Errorf("%s kept its status but its transition time became %v", c.Type, c.LastTransitionTime)
		}
	}
	st = v1alpha1.CompositionStatus{}
	status.SetReady(&st, 2, "2/2 ready")
	status.KeepTransitionTimes(&st, old)
	if c := st.Conditions[0]; c.LastTransitionTime.Equal(&then) {
		t.Errorf("Ready turned True but kept the transition time of False")
	}
}
