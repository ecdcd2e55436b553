package funcs

import (
	"strconv"
	"strings"
)

// This file holds until, untilStep and seq: their lengths are computed
// without overflow and checked (MaxLoop, the budget) before they are built.
// It stays: sprig's own length arithmetic overflows (a short list from a
// huge range), and a long list is an error at its line, not a kill.

// seq is sprig's seq (as GNU seq: "seq END", "seq START END", "seq START
// STEP END"), its length checked before it is built.
func (g *Guard) seq(params ...int) (string, error) {
	var start, step, end int
	switch len(params) {
	case 1:
		start, step, end = 1, 1, params[0]
		if end < start {
			step = -1
		}
	case 2:
		start, step, end = params[0], 1, params[1]
		if end < start {
			step = -1
		}
	case 3:
		start, step, end = params[0], params[1], params[2]
	default:
		return "", nil
	}
	var n uint64
	switch {
	case step > 0 && end >= start:
		n = (uint64(end)-uint64(start))/uint64(step) + 1
	case step < 0 && end < start: // sprig: an equal end goes up
		n = (uint64(start)-uint64(end))/(0-uint64(step)) + 1
	}
	if n > MaxLoop {
		return "", tooLarge("seq", "more than %d numbers: longer than MaxLoop", MaxLoop)
	}
	if err := g.take("seq", int64(n)*21); err != nil {
		return "", err
	}
	var b strings.Builder
	for i := range int(n) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(start + i*step))
	}
	return b.String(), nil
}

// untilStep is sprig's untilStep (until is untilStep 0 n ±1): the numbers
// from start, by step, before stop; none when step goes away from stop.
// Its length is computed without overflow and checked before it is built.
func (g *Guard) untilStep(fn string, start, stop, step int) ([]int, error) {
	var n uint64
	switch {
	case step > 0 && stop > start:
		n = (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	case step < 0 && stop < start:
		n = (uint64(start)-uint64(stop)-1)/(0-uint64(step)) + 1
	}
	if n > MaxLoop {
		return nil, tooLarge(fn, "a list of more than %d numbers is longer than MaxLoop", MaxLoop)
	}
	if err := g.take(fn, int64(n)*elementBytes); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}
