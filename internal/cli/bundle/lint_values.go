package bundle

import (
	"fmt"
	"io"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

// lintUndeclaredValues warns, on stderr, of each .Values path a template
// of b reads that neither a values.yaml sets nor, when b has one, its
// schema declares (infer.Undeclared), with its file and line and the
// declared path nearest by edit distance (those of one line that
// suggest nothing in one warning): such a read renders an empty
// string, with no error. Warnings, not problems: a template may read a
// value a user only sometimes gives. A template that does not parse is
// a problem the renders report.
func lintUndeclaredValues(dir string, b *templates.Bundle, stderr io.Writer) {
	warnings, err := infer.Undeclared(b)
	if err != nil {
		return
	}
	for _, line := range infer.Lines(warnings) {
		fmt.Fprintf(stderr, "warning: %s: %s\n", dir, line)
	}
}
