package main

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// BenchmarkRender is every case of Cases as a sub-benchmark, for
// `go test -bench . -cpuprofile`.
func BenchmarkRender(b *testing.B) {
	for _, c := range Cases() {
		b.Run(c.Name(), c.Run)
	}
}

// TestSameObjects checks that the benchmark measures the same work: each
// chart folder loads in both and renders the same objects, but for
// .Release.Service (stencil, Helm).
func TestSameObjects(t *testing.T) {
	for _, name := range Charts {
		t.Run(name, func(t *testing.T) {
			b, err := StencilLoad(ChartDir(name))
			if err != nil {
				t.Fatal(err)
			}
			objs, err := StencilRender(b)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				y, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, normal(string(y)))
			}
			c, err := HelmLoad(ChartDir(name))
			if err != nil {
				t.Fatal(err)
			}
			out, err := HelmRender(c)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, text := range out {
				for _, doc := range strings.Split(text, "\n---") {
					var m map[string]any
					if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
						t.Fatalf("Helm's output: %v\n%s", err, doc)
					}
					if len(m) == 0 {
						continue
					}
					y, _ := yaml.Marshal(m)
					want = append(want, normal(strings.ReplaceAll(string(y), "managed-by: Helm", "managed-by: stencil")))
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if len(got) < 5 {
				t.Errorf("stencil rendered %d objects", len(got))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stencil and Helm differ (-helm +stencil):\n%s", diff)
			}
		})
	}
}

// checksumRE matches a checksum annotation: of text that holds
// .Release.Service, so it differs between the two.
var checksumRE = regexp.MustCompile(`(checksum/[a-z-]+): [0-9a-f]{64}`)

func normal(y string) string { return checksumRE.ReplaceAllString(y, "$1: …") }
