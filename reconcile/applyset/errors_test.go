package applyset

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// TestTerminalReason: what no retry can fix has a reason; the rest is
// transient.
func TestTerminalReason(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	status := func(code int32, reason metav1.StatusReason, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}}
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		// terminal
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), v1alpha1.ReasonForbidden},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "x", nil), v1alpha1.ReasonInvalid},
		{"bad request", apierrors.NewBadRequest("no"), v1alpha1.ReasonBadRequest},
		{"413", status(http.StatusRequestEntityTooLarge, "", "too large"), v1alpha1.ReasonTooLarge},
		{"etcd too large", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), v1alpha1.ReasonTooLarge},
		{"undecodable", status(500, "", "failed to convert new object (ns/s; /v1, Kind=Secret) to proper version: error decoding from json: illegal base64 data"), v1alpha1.ReasonBadRequest},
		// transient
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("changed")), ""},
		{"timeout", apierrors.NewTimeoutError("slow", 1), ""},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), ""},
		{"internal", apierrors.NewInternalError(errors.New("etcd unavailable")), ""},
		{"unavailable", apierrors.NewServiceUnavailable("later"), ""},
		{"connection", errors.New("dial tcp: connection refused"), ""},
		{"not found", apierrors.NewNotFound(gr, "ns"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminalReason(tt.err); got != tt.want {
				t.Errorf("TerminalReason(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// TestRedactKeepsReasonAndCode: a Secret's error without a reason gets one
// from its status code, keeps the code and stays classifiable, and never
// quotes the server's message.
func TestRedactKeepsReasonAndCode(t *testing.T) {
	secret := obj("Secret", "s")
	secret.SetAPIVersion("v1")
	quoted := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
		Message: "failed to convert new object: error decoding from json: hunter2"}}
	got := Redact(secret, quoted)
	for _, want := range []string{"InternalError", "500", "could not decode", "withheld"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("redacted error %q lacks %q", got, want)
		}
	}
	if strings.Contains(got.Error(), "hunter2") {
		t.Errorf("redacted error quotes the server's message: %q", got)
	}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
		field.ErrorList{field.Invalid(field.NewPath("data", "password"), "hunter2", "bad value")})
	if r := Redact(secret, invalid); !apierrors.IsInvalid(r) || apierrors.ReasonForError(r) != metav1.StatusReasonInvalid {
		t.Errorf("redacted Invalid error is no longer Invalid: %#v", r)
	}
	if got := Redact(secret, errors.New("dial tcp: hunter2")).Error(); strings.Contains(got, "hunter2") {
		t.Errorf("redacted error quotes a non-API error: %q", got)
	}
}
