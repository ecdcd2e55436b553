package fault

import (
	"fmt"
	"strings"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Reasons a render can be stopped for (RenderError.Reason): it ran past
// its deadline, or past one of its size bounds (memory, output bytes,
// objects, loop iterations, template calls). They are the API's condition
// reasons, which a parent's Stalled condition reports as they are.
const (
	ReasonTimeout  = v1alpha1.ReasonRenderTimeout
	ReasonTooLarge = v1alpha1.ReasonRenderTooLarge
)

// RenderError is every error of loading or rendering a bundle. It names the
// bundle file and line (File, Line) of a template problem, or the values
// field path (Path) of a values problem, with the message.
type RenderError struct {
	// File is the bundle file at fault, such as templates/deployment.yaml.
	File string
	// Line is the 1-based line in File, 0 when unknown.
	Line int
	// Path is the field path of a values error, such as values.replicas.
	Path string
	// Reason classifies the error for status conditions: ReasonTimeout,
	// ReasonTooLarge, or "" for every other mistake in a bundle or values.
	Reason string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

func (e *RenderError) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Path != "" && !strings.HasPrefix(e.Msg, e.Path):
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return e.Msg
}

// Unwrap returns the underlying error.
func (e *RenderError) Unwrap() error { return e.Err }
