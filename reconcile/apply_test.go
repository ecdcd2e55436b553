package reconcile

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestRedact: an API error about a Secret keeps its reason and field paths
// but never the values the server may quote; other kinds' errors pass as they are.
func TestRedact(t *testing.T) {
	secret := obj("Secret", "s")
	secret.SetAPIVersion("v1")
	quoted := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
		field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2", "bad value")})
	got := redact(secret, quoted).Error()
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
	if got := redact(cm, quoted).Error(); !strings.Contains(got, "hunter2") {
		t.Errorf("a ConfigMap's error was redacted: %q", got)
	}
}
