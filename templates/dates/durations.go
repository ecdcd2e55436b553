package dates

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// This file holds Helm v4's duration helpers (mustToDuration,
// durationSeconds, ..., durationRoundTo, durationTruncateTo), written
// for stencil with the semantics of Helm v4.3.1's engine: they convert
// what they are given and never read the clock, so a render is the same
// on every machine. They return numbers or a time.Duration, which
// allocate nothing to charge.

// Bounds of a number of seconds that converts to a time.Duration, as
// Helm's engine sets them.
const (
	maxSeconds      = math.MaxInt64 / int64(time.Second)
	minSeconds      = math.MinInt64 / int64(time.Second)
	maxSecondsFloat = float64(math.MaxInt64) / float64(time.Second)
	minSecondsFloat = float64(math.MinInt64) / float64(time.Second)
)

var errNotDuration = errors.New("not a duration")

// toDuration is the duration v stands for, as Helm's helpers read it: a
// time.Duration; a string time.ParseDuration reads ("1h30m"), else a
// number of seconds ("2.5"), spaces around it ignored; an integer or a
// float as seconds. Anything else, and a number of seconds out of a
// Duration's range, NaN or infinite, is an error (which every helper but
// mustToDuration swallows, as Helm's).
func toDuration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case time.Duration:
		return x, nil
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, errNotDuration
		}
		if d, err := time.ParseDuration(s); err == nil {
			return d, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, errNotDuration
		}
		return secondsFloat(f)
	case nil:
		return 0, errNotDuration
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		if n := rv.Int(); n >= minSeconds && n <= maxSeconds {
			return time.Duration(n) * time.Second, nil
		}
	case rv.CanUint():
		if n := rv.Uint(); n <= uint64(maxSeconds) {
			return time.Duration(n) * time.Second, nil
		}
	case rv.CanFloat():
		return secondsFloat(rv.Float())
	}
	return 0, errNotDuration
}

// secondsFloat is f seconds as a Duration, truncated to the nanosecond.
func secondsFloat(f float64) (time.Duration, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f > maxSecondsFloat || f < minSecondsFloat {
		return 0, errNotDuration
	}
	ns := f * float64(time.Second)
	if ns > float64(math.MaxInt64) || ns < float64(math.MinInt64) {
		return 0, errNotDuration
	}
	return time.Duration(ns), nil
}

// DurationFuncs returns Helm's duration helpers.
func DurationFuncs() map[string]any {
	orZero := func(v any) time.Duration {
		d, _ := toDuration(v) // 0 on an error, as Helm's
		return d
	}
	// to is a duration rounded or truncated to a multiple: 0 when v is not
	// a duration, v when m is not one.
	to := func(op func(time.Duration, time.Duration) time.Duration) func(v, m any) time.Duration {
		return func(v, m any) time.Duration {
			d, err := toDuration(v)
			if err != nil {
				return 0
			}
			mul, err := toDuration(m)
			if err != nil {
				return d
			}
			return op(d, mul)
		}
	}
	return map[string]any{
		"mustToDuration": func(v any) (time.Duration, error) {
			d, err := toDuration(v)
			if err != nil {
				return 0, funcError("mustToDuration", "want a duration (\"1h30m\"), or seconds as a number or a string, in the range of a duration; got a %T that is none", v)
			}
			return d, nil
		},
		"durationSeconds":      func(v any) float64 { return orZero(v).Seconds() },
		"durationMilliseconds": func(v any) int64 { return orZero(v).Milliseconds() },
		"durationMicroseconds": func(v any) int64 { return orZero(v).Microseconds() },
		"durationNanoseconds":  func(v any) int64 { return orZero(v).Nanoseconds() },
		"durationMinutes":      func(v any) float64 { return orZero(v).Minutes() },
		"durationHours":        func(v any) float64 { return orZero(v).Hours() },
		"durationDays":         func(v any) float64 { return orZero(v).Hours() / 24 },
		"durationWeeks":        func(v any) float64 { return orZero(v).Hours() / 24 / 7 },
		"durationRoundTo":      to(time.Duration.Round),
		"durationTruncateTo":   to(time.Duration.Truncate),
	}
}
