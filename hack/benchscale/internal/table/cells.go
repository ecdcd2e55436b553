package table

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ratio is a ÷ b as "2.15×", or "-" when either is unknown.
func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a.Seconds()/b.Seconds())
}

// perMs is d shared among n, in milliseconds.
func perMs(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(n, 1))
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Millisecond).String()
}

func ms(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

func rate(objects int, d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(objects)/d.Seconds())
}

func mib(kib int) string {
	if kib == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

func growth(before, after int) string {
	if before == 0 || after == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(after-before)/float64(before))
}

// perKey writes counts divided by n, by key in order: "full 1.00, unchanged 0.50".
func perKey(counts map[string]float64, n int) string {
	if len(counts) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, counts[k]/float64(n))
	}
	return strings.Join(parts, ", ")
}
