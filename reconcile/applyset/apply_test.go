package applyset

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestRedact: an API error about a Secret keeps its reason and field paths
// but never the values the server may quote; other kinds' errors keep the
// field path and the rule, without the value.
func TestRedact(t *testing.T) {
	secret := obj("Secret", "s")
	secret.SetAPIVersion("v1")
	quoted := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
		field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2", "bad value")})
	got := Redact(secret, quoted).Error()
	if strings.Contains(got, "hunter2") {
		t.Errorf("redacted error quotes the value: %q", got)
	}
	for _, want := range []string{"Invalid", "data.password", "withheld"} {
		if !strings.Contains(got, want) {
			t.Errorf("redacted error %q lacks %q", got, want)
		}
	}
	cm := obj("ConfigMap", "c")
	cm.SetAPIVersion("v1")
	got = Redact(cm, quoted).Error()
	if strings.Contains(got, "hunter2") || !strings.Contains(got, "data.password: Invalid value: bad value") {
		t.Errorf("a ConfigMap's error = %q, want the field and rule without the value", got)
	}
	if !apierrors.IsInvalid(Redact(cm, quoted)) {
		t.Errorf("a ConfigMap's error lost its reason")
	}
}

// TestScrubCause: every form apimachinery quotes a value in loses the
// value and keeps the rule.
func TestScrubCause(t *testing.T) {
	p := field.NewPath("spec", "x")
	tests := []struct {
		err  *field.Error
		want string
	}{
		{field.Invalid(p, "hunter2: with \"quotes\"", "must be short"), "Invalid value: must be short"},
		{field.Invalid(p, 70000, "must be between 1 and 65535, inclusive"), "Invalid value: must be between 1 and 65535, inclusive"},
		{field.Invalid(p, -1.5, "must be positive"), "Invalid value: must be positive"},
		{field.Invalid(p, true, "must be false"), "Invalid value: must be false"},
		{field.Invalid(p, map[string]any{"hunter2": "x: y"}, "must be a string"), "Invalid value"},
		{field.Invalid(p, []string{"hunter2"}, "bad"), "Invalid value"},
		{field.NotSupported(p, "hunter2", []string{"a", "b"}), `Unsupported value: supported values: "a", "b"`},
		{field.Duplicate(p, "hunter2"), "Duplicate value"},
		{field.Required(p, "needed"), "Required value: needed"},
		{field.Forbidden(p, "not allowed"), "Forbidden: not allowed"},
	}
	for _, tt := range tests {
		if got := scrubCause(tt.err.ErrorBody()); got != tt.want {
			t.Errorf("scrubCause(%q) = %q, want %q", tt.err.ErrorBody(), got, tt.want)
		}
	}
}

func obj(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetKind(kind)
	u.SetName(name)
	return u
}
