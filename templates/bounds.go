package templates

import (
	"github.com/stencil-dev/stencil/templates/budget"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/funcs"
	"github.com/stencil-dev/stencil/templates/manifest"
	"github.com/stencil-dev/stencil/templates/measure"
)

// Bounds of one render. Exceeding one is a RenderError, never a crash.
const (
	// MaxObjects is the most objects one render may produce (see package
	// manifest).
	MaxObjects = manifest.MaxObjects
	// MaxObjectBytes is the largest object a render may produce,
	// serialized as JSON: 1.5 MiB, what the API server stores (see
	// package manifest).
	MaxObjectBytes = manifest.MaxObjectBytes
	// MaxOutputBytes is the most bytes the templates of one render may
	// write (Limits.MaxOutputBytes's default, see package budget).
	MaxOutputBytes = budget.MaxOutputBytes
	// MaxIncludeDepth bounds include and tpl recursion
	// (Limits.MaxIncludeDepth's default, see package budget).
	MaxIncludeDepth = budget.MaxIncludeDepth
)

// Bounds of the functions of one render (see package funcs): passing one
// is a RenderError of Reason ReasonTooLarge naming the file and line of
// the call.
const (
	// MaxFunctionBytes is what the functions of one render may produce,
	// all calls together.
	MaxFunctionBytes = funcs.MaxFunctionBytes
	// MaxCostlyCalls bounds the calls of one render to the functions that
	// take a noticeable time each (derivePassword, bcrypt, ...).
	MaxCostlyCalls = funcs.MaxCostlyCalls
	// MaxLoop is the longest list until, untilStep and seq may build.
	MaxLoop = funcs.MaxLoop
	// MaxValueDepth bounds how deeply maps and lists nest: in values, in
	// what fromYaml and fromJson parse, and in what the functions that
	// walk a value are given (see package measure).
	MaxValueDepth = measure.MaxValueDepth
)

// Bounds of a bundle's charts (see package chart).
const (
	// MaxCharts bounds the uses of charts in a bundle's tree, the root,
	// every subchart and every alias counted.
	MaxCharts = chart.MaxCharts
	// MaxArchiveBytes bounds what a bundle's chart archives unpack to,
	// all together.
	MaxArchiveBytes = chart.MaxArchiveBytes
	// MaxArchiveFiles bounds the files a bundle's chart archives hold,
	// all together.
	MaxArchiveFiles = chart.MaxArchiveFiles
)
