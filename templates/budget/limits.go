package budget

import (
	"context"
	"errors"
	"fmt"

	"github.com/stencil-dev/stencil/templates/fault"
)

// Bounds of one render that are Limits' defaults. Exceeding one is a
// RenderError, never a crash.
const (
	// MaxOutputBytes is the most bytes the templates of one render may write.
	MaxOutputBytes = 16 << 20
	// MaxIncludeDepth bounds include and tpl recursion.
	MaxIncludeDepth = 100
)

// Defaults of Limits, far above what real charts use: the webapp testdata
// and the example bundles take under 0.1% of each (templates'
// bounds_test.go).
const (
	// DefaultMaxSteps is Limits.MaxSteps when zero.
	DefaultMaxSteps = 10_000_000
	// DefaultMaxRangeIterations is Limits.MaxRangeIterations when zero.
	DefaultMaxRangeIterations = 1_000_000
	// DefaultMaxTemplateCalls is Limits.MaxTemplateCalls when zero.
	DefaultMaxTemplateCalls = 100_000
)

// Limits bound one whole render: every template, {{template}}, include and
// tpl it executes charges the same counters, so nesting cannot multiply
// them. Passing one stops the render with a RenderError of Reason
// ReasonTooLarge naming the file and line being executed and the bound.
// A zero or negative field takes its default (DefaultLimits).
type Limits struct {
	// MaxSteps bounds the template nodes executed (actions, text, if,
	// with, range, ...) plus the range iterations.
	MaxSteps int64
	// MaxRangeIterations bounds the iterations of every range, whatever it
	// ranges over.
	MaxRangeIterations int64
	// MaxTemplateCalls bounds the include, tpl and {{template}} calls
	// (each template file executed counts one too).
	MaxTemplateCalls int64
	// MaxIncludeDepth bounds how deeply include, tpl and {{template}} nest,
	// a template file being depth 1.
	MaxIncludeDepth int64
	// MaxOutputBytes bounds the bytes every template, include and tpl of
	// the render writes, together (output passed up through an include
	// counts again where it is written).
	MaxOutputBytes int64
}

// DefaultLimits returns the limits of a render whose Input.Limits is zero.
func DefaultLimits() Limits {
	return Limits{
		MaxSteps:           DefaultMaxSteps,
		MaxRangeIterations: DefaultMaxRangeIterations,
		MaxTemplateCalls:   DefaultMaxTemplateCalls,
		MaxIncludeDepth:    MaxIncludeDepth,
		MaxOutputBytes:     MaxOutputBytes,
	}
}

// WithDefaults returns l with its zero and negative fields set to the
// defaults.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int64 }{
		{&l.MaxSteps, &d.MaxSteps}, {&l.MaxRangeIterations, &d.MaxRangeIterations},
		{&l.MaxTemplateCalls, &d.MaxTemplateCalls}, {&l.MaxIncludeDepth, &d.MaxIncludeDepth},
		{&l.MaxOutputBytes, &d.MaxOutputBytes},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// StopError returns the RenderError of executing the template file when
// a budget of limits l (with their defaults) stopped it: it names the
// innermost bundle file and line executing and the bound passed, with
// Reason ReasonTooLarge (ReasonTimeout at the context's deadline, none
// when it was canceled otherwise). It returns nil when err is no stop
// of a budget.
func StopError(file string, err error, l Limits) *fault.RenderError {
	var be *budgetError
	if !errors.As(err, &be) {
		return nil
	}
	re := &fault.RenderError{File: file, Reason: fault.ReasonTooLarge, Err: err}
	if be.at != nil {
		re.File, re.Line = be.at.file, be.at.line
	}
	switch be.kind {
	case stopSteps:
		re.Msg = fmt.Sprintf("render stopped: more than %d steps", l.MaxSteps)
	case stopRangeIterations:
		re.Msg = fmt.Sprintf("render stopped: more than %d range iterations", l.MaxRangeIterations)
	case stopTemplateCalls:
		re.Msg = fmt.Sprintf("render stopped: more than %d template calls (include, tpl and template)", l.MaxTemplateCalls)
	case stopDepth:
		re.Msg = fmt.Sprintf("render stopped: include, tpl and template nested more than %d deep (a template including itself?)", l.MaxIncludeDepth)
	case stopOutputBytes:
		re.Msg = fmt.Sprintf("render stopped: output larger than %d bytes", l.MaxOutputBytes)
	case stopDone:
		re.Reason, re.Msg = fault.ReasonTimeout, "render stopped: deadline exceeded"
		if !errors.Is(be.err, context.DeadlineExceeded) {
			re.Reason, re.Msg = "", "render canceled"
		}
	}
	return re
}
