package applyset

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestStale: what the API server answers a failed uid or resourceVersion
// precondition (checked against kube-apiserver in package reconcile's
// TestForcedApplyCarriesItsJudgement) is read as "judge again"; any
// other refusal is not.
func TestStale(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	gk := schema.GroupKind{Kind: "ConfigMap"}
	uid := field.Invalid(field.NewPath("metadata", "uid"), "x", "field is immutable")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		// A resourceVersion that is not the object's, or a uid with no object.
		{"conflict", apierrors.NewConflict(cm, "a", errors.New("the object has been modified")), true},
		// A uid that is not the object's, its resourceVersion the same.
		{"uid immutable", apierrors.NewInvalid(gk, "a", field.ErrorList{uid}), true},
		{"uid and another field invalid", apierrors.NewInvalid(gk, "a", field.ErrorList{uid, field.Invalid(field.NewPath("data"), "x", "bad")}), false},
		{"another field invalid", apierrors.NewInvalid(gk, "a", field.ErrorList{field.Invalid(field.NewPath("data"), "x", "bad")}), false},
		{"forbidden", apierrors.NewForbidden(cm, "a", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(cm, "a"), false},
		{"not an API error", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		if got := stale(tt.err); got != tt.want {
			t.Errorf("%s: stale = %v, want %v", tt.name, got, tt.want)
		}
	}
}
