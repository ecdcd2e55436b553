package source_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// bigIndex is an index of about size bytes as `helm repo index` lays it
// out: many charts of many versions, podinfo's two among them (at
// digests of tgz), in YAML or, with asJSON, in JSON.
func bigIndex(size int, tgz map[string][]byte, asJSON bool) []byte {
	entry := func(chart, v, digest string) map[string]any {
		return map[string]any{"apiVersion": "v2", "name": chart, "version": v, "appVersion": "1.25.3",
			"description": "NGINX Open Source is a web server that can be also used as a reverse proxy, load balancer, and HTTP cache.",
			"digest":      digest, "urls": []string{"charts/" + chart + "-" + v + ".tgz"},
			"created": "2023-11-08T10:22:43.123456789Z", "home": "https://example.com", "keywords": []string{"web", "http"},
			"annotations": map[string]string{"category": "Infrastructure", "licenses": "Apache-2.0"},
			"maintainers": []map[string]string{{"name": "Example", "url": "https://example.com/charts"}}}
	}
	var b bytes.Buffer
	write := func(s string) { b.WriteString(s) }
	if asJSON {
		write(`{"apiVersion":"v1","entries":{`)
	} else {
		write("apiVersion: v1\nentries:\n")
	}
	chart := func(name string, versions []map[string]any) {
		if asJSON {
			v, _ := json.Marshal(versions)
			if b.Bytes()[b.Len()-1] != '{' {
				write(",")
			}
			fmt.Fprintf(&b, "%q:%s", name, v)
			return
		}
		write("  " + name + ":\n")
		for _, e := range versions {
			v, _ := json.Marshal(e) // JSON is YAML: one flow mapping per item
			write("  - " + string(v) + "\n")
		}
	}
	var podinfo []map[string]any
	for v, data := range tgz {
		sum := sha256.Sum256(data)
		podinfo = append(podinfo, entry("podinfo", v, hex.EncodeToString(sum[:])))
	}
	for c := 0; b.Len() < size; c++ {
		if c == 100 {
			chart("podinfo", podinfo)
		}
		var versions []map[string]any
		for v := range 100 {
			versions = append(versions, entry(fmt.Sprintf("chart%d", c), fmt.Sprintf("1.%d.0", v), strings.Repeat("ab", 32)))
		}
		chart(fmt.Sprintf("chart%d", c), versions)
	}
	if asJSON {
		write("}}")
	}
	return b.Bytes()
}

// peakHeap runs f and returns the most heap its objects took meanwhile
// over what they took before, sampled every millisecond; the collector
// runs when the heap grows by a tenth, so what is measured is mostly
// what f keeps, not its garbage.
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base, peak := read(), uint64(0)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	if peak = max(peak, read()); peak < base {
		return 0
	}
	return peak - base
}

// TestSourceIndexBounded: a chart repository's index of 40 MiB (the size
// of the largest public ones) is read with a bounded heap, in YAML and in
// JSON: only the chart's own entries are parsed. Read whole, as it was
// before issue 37, it took a GiB.
func TestSourceIndexBounded(t *testing.T) {
	repo := sourcetest.NewRepo(t, "", "")
	tgz := map[string][]byte{}
	for _, v := range []string{"1.2.0", "1.3.0"} {
		tgz[v] = sourcetest.Chart(t, "podinfo", v, podinfo)
		repo.Serve("/charts/podinfo-"+v+".tgz", tgz[v])
	}
	spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo", Version: "1.x"}}
	creds := source.Credentials{CA: repo.CA}
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			repo.ServeIndex(bigIndex(40<<20, tgz, asJSON), false)
			var a *source.Artifact
			var err error
			peak := peakHeap(func() { a, err = source.Fetch(ctx(t), spec, creds, loopback) })
			if err != nil {
				t.Fatal(err)
			}
			if a.Version != "1.3.0" {
				t.Errorf("version %s, want 1.3.0", a.Version)
			}
			t.Logf("peak heap over the start: %d MiB", peak>>20)
			if peak > 32<<20 {
				t.Errorf("resolving in a 40 MiB index took %d MiB of heap, want under 32 MiB", peak>>20)
			}
		})
	}
}

// TestSourceIndexTooLarge: an index over MaxIndexSize is refused
// (TooLarge) naming the repository and the bound, whether it says its
// length or not.
func TestSourceIndexTooLarge(t *testing.T) {
	repo := sourcetest.NewRepo(t, "", "")
	spec := v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}
	huge := append([]byte("apiVersion: v1\nentries:\n"), bytes.Repeat([]byte("# padding padding padding padding\n"), source.MaxIndexSize/34+1)...)
	for _, length := range []bool{true, false} {
		t.Run(fmt.Sprintf("Content-Length=%v", length), func(t *testing.T) {
			repo.ServeIndex(huge, length)
			_, err := source.Fetch(ctx(t), spec, source.Credentials{CA: repo.CA}, loopback)
			wantReason(t, err, source.ReasonTooLarge)
			for _, want := range []string{"chart repository " + repo.URL + "/", "64 MiB"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
