package dates

import (
	"fmt"
	"strconv"
	"time"

	"github.com/stencil-dev/stencil/templates/fault"
)

// This file makes sprig's date functions give the same result on every
// machine and every render (see "Functions" in docs/templates.md). It
// stays: determinism is not something a process bound gives.

// funcError is an error of one of the functions: its message names the
// function and says what is wrong in terms of types and sizes, never
// quoting an argument (as package funcs' errors).
func funcError(fn, format string, args ...any) error {
	return &fault.RenderError{Msg: fn + ": " + fmt.Sprintf(format, args...)}
}

// dateTime is the time a date function formats: a time.Time, or seconds
// since the Unix epoch. sprig takes any other argument as "now"; that is
// refused unless the bundle allows nondeterministic functions.
func dateTime(fn string, v any, allowNow bool) (time.Time, error) {
	switch x := v.(type) {
	case time.Time:
		return x, nil
	case *time.Time:
		if x != nil {
			return *x, nil
		}
	case int:
		return time.Unix(int64(x), 0), nil
	case int32:
		return time.Unix(int64(x), 0), nil
	case int64:
		return time.Unix(x, 0), nil
	}
	if allowNow {
		return time.Now(), nil
	}
	return time.Time{}, funcError(fn, "want a time (from toDate) or seconds since the Unix epoch, got a %T: sprig would use the current time, which differs on every render", v)
}

// timeZone is a date function's time zone: "UTC", and "Local" and "" as
// UTC, so a render does not depend on the machine's zone. Any other name
// is refused: time.LoadLocation reads ZONEINFO and the machine's zone
// database before any embedded one, so a named zone could render
// differently on two machines (or two versions of their tzdata).
func timeZone(fn, zone string) (*time.Location, error) {
	switch zone {
	case "UTC", "Local", "":
		return time.UTC, nil
	}
	return nil, funcError(fn, "only the UTC time zone is supported (\"Local\" is UTC): a named zone is read from the machine's time zone database, which differs between machines")
}

// Funcs returns date, dateInZone (date_in_zone), htmlDate,
// htmlDateInZone, toDate, mustToDate and durationRound. Unless allowNow,
// those that sprig lets read the clock (a date of something not a time,
// durationRound of a time) refuse to.
func Funcs(allowNow bool) map[string]any {
	dateInZone := func(fn, layout string, v any, zone string) (string, error) {
		t, err := dateTime(fn, v, allowNow)
		if err != nil {
			return "", err
		}
		if len(layout) > 256 {
			return "", funcError(fn, "the layout is longer than 256 bytes")
		}
		loc, err := timeZone(fn, zone)
		if err != nil {
			return "", err
		}
		return t.In(loc).Format(layout), nil
	}
	inZone := func(fn string) func(string, any, string) (string, error) {
		return func(layout string, v any, zone string) (string, error) { return dateInZone(fn, layout, v, zone) }
	}
	return map[string]any{
		"date":           func(layout string, v any) (string, error) { return dateInZone("date", layout, v, "UTC") },
		"dateInZone":     inZone("dateInZone"),
		"date_in_zone":   inZone("date_in_zone"),
		"htmlDate":       func(v any) (string, error) { return dateInZone("htmlDate", "2006-01-02", v, "UTC") },
		"htmlDateInZone": func(v any, zone string) (string, error) { return dateInZone("htmlDateInZone", "2006-01-02", v, zone) },
		"toDate": func(layout, s string) time.Time {
			t, _ := time.ParseInLocation(layout, s, time.UTC)
			return t
		},
		"mustToDate": func(layout, s string) (time.Time, error) {
			t, err := time.ParseInLocation(layout, s, time.UTC)
			if err != nil {
				return time.Time{}, funcError("mustToDate", "the string does not match the layout")
			}
			return t, nil
		},
		"durationRound": durationRound(allowNow),
	}
}

// durationRound is sprig's durationRound, refusing a time (sprig rounds
// the time since it, which changes every render).
func durationRound(allowNow bool) func(any) (string, error) {
	return func(v any) (string, error) {
		var d time.Duration
		switch x := v.(type) {
		case string:
			d, _ = time.ParseDuration(x)
		case int64: // nanoseconds; any other type (an int too) is 0, as sprig's
			d = time.Duration(x)
		case time.Time:
			if !allowNow {
				return "", funcError("durationRound", "a time is rounded as the time since it, which differs on every render; give a duration")
			}
			d = time.Since(x)
		}
		return roundDuration(d), nil
	}
}

// roundDuration is sprig's rounding: the largest unit, truncated.
func roundDuration(d time.Duration) string {
	u := uint64(d)
	if d < 0 {
		u = -u
	}
	units := []struct {
		size uint64
		name string
	}{
		{uint64(time.Hour) * 24 * 365, "y"}, {uint64(time.Hour) * 24 * 30, "mo"}, {uint64(time.Hour) * 24, "d"},
		{uint64(time.Hour), "h"}, {uint64(time.Minute), "m"}, {uint64(time.Second), "s"},
	}
	for _, unit := range units {
		if u > unit.size {
			return strconv.FormatUint(u/unit.size, 10) + unit.name
		}
	}
	return "0s"
}
