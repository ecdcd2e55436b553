package main

import (
	"maps"
	"slices"
	"testing"
)

// TestCharts renders each chart of Suite with stencil and, twice, with
// Helm's engine, and requires the same objects with the same fields, but
// for the values the two Helm renders disagree on (masked in both):
// CompareSuite; the same CRDs in the crds/ folders of the chart and
// its enabled subcharts (a chart with a crds/ folder must say so,
// SuiteChart.CRDs); and the same notes, the root chart's
// templates/NOTES.txt as `helm install` keeps it.
func TestCharts(t *testing.T) {
	defer RemoveSuite()
	for _, c := range Suite {
		t.Run(c.Name, func(t *testing.T) {
			got, err := CompareSuite(c)
			if err != nil {
				t.Fatal(err)
			}
			if got.Objects == 0 {
				t.Error("Helm rendered no object")
			}
			if (got.CRDs > 0) != c.CRDs {
				t.Errorf("crds/ holds %d objects, but SuiteChart.CRDs is %v", got.CRDs, c.CRDs)
			}
			for _, d := range got.Diffs {
				t.Error(d)
			}
			for _, k := range slices.Sorted(maps.Keys(got.Random)) {
				t.Logf("random in %s: %v", k, got.Random[k])
			}
			t.Logf("%d objects, %d with random fields; %d objects in crds/; %d bytes of NOTES.txt (random: %v)", got.Objects, len(got.Random), got.CRDs, len(got.Notes), got.NotesRandom)
		})
	}
}
