package main

import (
	"fmt"
	"io"
	"testing"
)

// printTable prints, for each chart, warm and cold, stencil's and Helm's
// CPU time, wall time and memory allocated per render, and how many times
// less CPU stencil takes.
func printTable(w io.Writer, results map[string]testing.BenchmarkResult) {
	fmt.Fprintf(w, "\n%-21s %-4s  %11s %11s %7s  %11s %11s  %9s %9s\n", "chart", "mode",
		"stencil CPU", "helm CPU", "speedup", "stencil wall", "helm wall", "stencil B", "helm B")
	for _, ch := range Charts {
		for _, mode := range []string{"warm", "cold"} {
			s, h := results[ch+"/"+mode+"/stencil"], results[ch+"/"+mode+"/helm"]
			sc, hc := s.Extra["cpu-ns/op"], h.Extra["cpu-ns/op"]
			fmt.Fprintf(w, "%-21s %-4s  %11s %11s %6.2fx  %11s %11s  %9s %9s\n", ch, mode,
				duration(sc), duration(hc), hc/sc, duration(float64(s.NsPerOp())), duration(float64(h.NsPerOp())),
				size(s.AllocedBytesPerOp()), size(h.AllocedBytesPerOp()))
		}
	}
}

func duration(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
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
