package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// BenchmarkRender is every case of Cases as a sub-benchmark, for
// `go test -bench . -cpuprofile`.
func BenchmarkRender(b *testing.B) {
	for _, c := range Cases() {
		b.Run(c.Name(), c.Run)
	}
}

// TestSameObjects checks that the benchmark measures the same work: each
// chart loads in both and renders the same objects, but for
// .Release.Service (stencil, Helm).
func TestSameObjects(t *testing.T) {
	for _, name := range Charts {
		if _, ok := SuiteByName(name); ok {
			continue // TestCharts compares them
		}
		t.Run(name, func(t *testing.T) {
			got, want, err := Objects(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < 5 {
				t.Errorf("stencil rendered %d objects", len(got))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stencil and Helm differ (-helm +stencil):\n%s", diff)
			}
		})
	}
	RemovePrometheus()
}
