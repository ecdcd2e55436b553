package main

import (
	"fmt"
	"io"
	"testing"
)

// printTable prints, for each chart, warm and cold, stencil's and Helm's
// time and memory per render and how many times faster stencil is.
func printTable(w io.Writer, results map[string]testing.BenchmarkResult) {
	fmt.Fprintf(w, "\n%-20s %-5s %12s %12s %8s %12s %12s\n", "chart", "mode", "stencil", "helm", "speedup", "stencil B", "helm B")
	for _, ch := range Charts {
		for _, mode := range []string{"warm", "cold"} {
			s, h := results[ch+"/"+mode+"/stencil"], results[ch+"/"+mode+"/helm"]
			fmt.Fprintf(w, "%-20s %-5s %12s %12s %7.2fx %12s %12s\n", ch, mode,
				duration(s.NsPerOp()), duration(h.NsPerOp()), float64(h.NsPerOp())/float64(s.NsPerOp()),
				size(s.AllocedBytesPerOp()), size(h.AllocedBytesPerOp()))
		}
	}
}

func duration(ns int64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

func size(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
