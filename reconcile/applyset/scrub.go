package applyset

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quotedValue matches the prefix of a field error that quotes the rejected
// value (apimachinery's field.Error.ErrorBody): the value may be a tenant's
// spec.values, so it is cut out.
var quotedValue = regexp.MustCompile(`^(Invalid value|Unsupported value|Duplicate value): `)

// goString matches a Go-quoted string at the start of a text.
var goString = regexp.MustCompile(`^"(?:[^"\\]|\\.)*"`)

// Scrub removes from an API server's validation error the values it
// quotes, keeping the reason, the status code, the field paths and the
// rules ("spec.ports[0].port: Invalid value: must be between 1 and 65535,
// inclusive"). Errors without causes pass unchanged: their messages name
// objects and verbs, not field values.
func Scrub(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	s := status.Status()
	if s.Details == nil || len(s.Details.Causes) == 0 {
		return err
	}
	out := *s.DeepCopy()
	msgs := make([]string, len(out.Details.Causes))
	for i := range out.Details.Causes {
		c := &out.Details.Causes[i]
		c.Message = scrubCause(c.Message)
		msgs[i] = c.Message
		if c.Field != "" {
			msgs[i] = c.Field + ": " + c.Message
		}
	}
	what := fmt.Sprintf("%s %q", out.Details.Kind, out.Details.Name)
	if out.Reason == metav1.StatusReasonInvalid {
		out.Message = what + " is invalid: " + strings.Join(msgs, "; ")
	} else {
		out.Message = fmt.Sprintf("%s: %s: %s", what, out.Reason, strings.Join(msgs, "; "))
	}
	return &apierrors.StatusError{ErrStatus: out}
}

// scrubCause drops the value from one cause's message: `Invalid value:
// "x": must be ...` becomes `Invalid value: must be ...`. A value it
// cannot delimit (a map or list printed by fmt) takes the rule with it.
func scrubCause(msg string) string {
	prefix := quotedValue.FindString(msg)
	if prefix == "" {
		return msg
	}
	label, rest := strings.TrimSuffix(prefix, " "), msg[len(prefix):]
	var value string
	switch {
	case strings.HasPrefix(rest, `"`):
		value = goString.FindString(rest)
	default: // a number, true, false or null: no space or colon in it
		value = rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789.-+eEtrufalsn"))]
	}
	rest = rest[len(value):]
	if value == "" || !strings.HasPrefix(rest, ": ") {
		return strings.TrimSuffix(label, ":")
	}
	return label + " " + strings.TrimPrefix(rest, ": ")
}
