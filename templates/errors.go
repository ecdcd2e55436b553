package templates

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
)

// Reasons a render can be stopped for (RenderError.Reason): it ran past
// its deadline, or past one of its size bounds. See package fault.
const (
	ReasonTimeout  = fault.ReasonTimeout
	ReasonTooLarge = fault.ReasonTooLarge
)

// RenderError is every error of loading or rendering a bundle: it names
// the bundle file and line, or the values field path (see package fault).
type RenderError = fault.RenderError

// templateErrRE matches text/template's "template: NAME:LINE:COL: msg" and
// "template: NAME:LINE: msg" forms; NAME is the bundle file the node came from.
var templateErrRE = regexp.MustCompile(`template: ([^:\s]+):(\d+)(?::\d+)?: (.*)`)

// executingRE matches the "executing "name" at <action>: " prefix.
var executingRE = regexp.MustCompile(`executing "[^"]*" at <.*?>: `)

// templateError turns a text/template error into a RenderError naming the
// file and line where it happened (for an error inside an include, the
// innermost one), falling back to file when the error carries no position.
//
// A RenderError raised inside a template function (a bound of the render)
// arrives wrapped by the executor: its Reason is kept, and its location is
// the executor's when it has none of its own.
func templateError(file string, err error) *RenderError {
	var inner *RenderError
	if errors.As(err, &inner) && inner.File != "" {
		return inner
	}
	reason := ""
	if inner != nil {
		reason = inner.Reason
	}
	msg := err.Error()
	matches := templateErrRE.FindAllStringSubmatchIndex(msg, -1)
	if len(matches) == 0 {
		return &RenderError{File: file, Reason: reason, Msg: msg, Err: err}
	}
	m := matches[len(matches)-1]
	line, _ := strconv.Atoi(msg[m[4]:m[5]])
	detail := msg[m[6]:m[7]]
	// Drop text/template's noise: `executing "x" at <...>: error calling f: `.
	detail = executingRE.ReplaceAllString(detail, "")
	if i := strings.Index(detail, "error calling "); i >= 0 {
		if j := strings.Index(detail[i:], ": "); j >= 0 {
			detail = detail[:i] + detail[i+j+2:]
		}
	}
	return &RenderError{File: msg[m[2]:m[3]], Line: line, Reason: reason, Msg: detail, Err: err}
}
