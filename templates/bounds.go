package templates

import "github.com/stencil-dev/stencil/templates/measure"

// MaxValueDepth bounds how deeply maps and lists nest: in values, in what
// fromYaml and fromJson parse, and in what the functions that walk a value
// are given (see package measure).
const MaxValueDepth = measure.MaxValueDepth
