package table

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample", ms(7), 95, 7 * time.Millisecond},
		{"median of an odd count, unsorted", ms(30, 10, 20), 50, 20 * time.Millisecond},
		{"nearest rank rounds up", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p95 of twenty is the nineteenth", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 95, 19 * time.Millisecond},
		{"p100 is the largest", ms(5, 9, 1), 100, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}
