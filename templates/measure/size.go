package measure

import (
	"fmt"
	"math"
)

// MaxValueDepth bounds how deeply maps and lists nest.
const (
	// MaxValueDepth bounds how deeply maps and lists nest: in values (the
	// tenant's, values.yaml), in what fromYaml and fromJson parse, and in
	// what toYaml, toJson, deepCopy, printf and the other functions that
	// walk a value are given.
	MaxValueDepth = 100
)

// SizeText writes a size that may have saturated.
func SizeText(n int64) string {
	if n < 0 || n == math.MaxInt64 {
		return "more bytes than fit in an int64"
	}
	return fmt.Sprintf("%d bytes", n)
}

// MulSat and AddSat are n*m and n+m for non-negative operands, saturating
// at math.MaxInt64 (and negative operands saturate too): size arithmetic
// that cannot wrap around into a small number.
func MulSat(n, m int64) int64 {
	if n < 0 || m < 0 {
		return math.MaxInt64
	}
	if n != 0 && m > math.MaxInt64/n {
		return math.MaxInt64
	}
	return n * m
}

// AddSat is the sum of n, saturating as MulSat.
func AddSat(n ...int64) int64 {
	var s int64
	for _, x := range n {
		if x < 0 || s > math.MaxInt64-x {
			return math.MaxInt64
		}
		s += x
	}
	return s
}
