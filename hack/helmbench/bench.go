// Command helmbench renders the same chart folders with stencil's templates
// package and with Helm's engine (helm.sh/helm/v4 pkg/engine), warm and
// cold, in one run, and prints a comparison table. It is a separate module
// so that stencil itself never depends on Helm.
//
// Warm is what a controller does on every reconcile: stencil renders a
// Bundle it parsed once, its generators answering the values the set
// keeps (keptValues: cilium's CA and certificates are made once per set);
// Helm has no parsed form to keep, so its warm render is ToRenderValues
// (values coalesced and validated against values.schema.json) and
// engine.Render on a chart loaded once, making new keys every time. Cold
// also loads the folder from disk: templates.Load then Render for stencil
// (the first render of a fresh Bundle, which parses its templates, with
// new generated values), loader.Load then the same for Helm. Before measuring, every chart must render as
// many objects with stencil as `helm template` prints (checkObjects).
//
// The charts are folders of stencil's templates/testdata, the
// prometheus chart with its four subcharts as `helm dependency build`
// leaves them, fetched through the Go module proxy (PrometheusDir), and
// the four largest charts of TestCharts' suite (prometheus-operator-crds,
// kyverno, argo-cd, kube-prometheus-stack) and cilium, which generates a
// CA and certificates (SuiteDir), required to render the same objects as Helm's
// engine with the suite's inputs (CompareSuite) and measured with the
// others'.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates"
)

// Charts are the charts measured: folders under stencil's templates/testdata,
// the prometheus chart with its four subcharts (PrometheusDir), the
// four largest charts of Suite by template bytes, subcharts included
// (4.5 MB, 3.6 MB, 2.1 MB, 1.7 MB), and cilium (0.4 MB), whose generated
// CA and certificates stencil's warm render takes from the set.
var Charts = []string{"webapp", "podinfo", "kube-state-metrics", Prometheus, "prometheus-operator-crds", "kyverno", "argo-cd", "kube-prometheus-stack", "cilium"}

// release is the Composition (Helm: the release) every render is for.
var release = templates.CompositionInfo{Name: "web", Namespace: "shop", UID: "1234"}

// ChartDir is the folder of a chart: relative to this module, or the
// prometheus chart assembled in a temporary folder.
func ChartDir(name string) (string, error) {
	if name == Prometheus {
		return PrometheusDir()
	}
	if c, ok := SuiteByName(name); ok {
		return SuiteDir(c)
	}
	return filepath.Join("..", "..", "templates", "testdata", name), nil
}

// StencilLoad loads a chart folder as a stencil Bundle.
func StencilLoad(dir string) (*templates.Bundle, error) {
	return templates.Load(os.DirFS(dir), templates.LoadOptions{Name: filepath.Base(dir)})
}

// StencilRender renders a loaded Bundle, its generators answering the
// values of generated (nil: new ones).
func StencilRender(b *templates.Bundle, generated map[string]string) ([]*unstructured.Unstructured, error) {
	return templates.Render(b, templates.Input{Composition: release, Generated: generated})
}

// keptValues renders b once and returns the values its generators made,
// which the controller keeps for the set (in its Secret) and gives every
// later render.
func keptValues(b *templates.Bundle) (map[string]string, error) {
	var obs templates.Observations
	_, err := templates.Render(b, templates.Input{Composition: release, Observations: &obs})
	return obs.Generated, err
}

// HelmLoad loads a chart folder with Helm's loader and, as `helm
// template` does before rendering, removes the subcharts the default
// values disable (ProcessDependencies, which also imports values).
func HelmLoad(dir string) (chart.Charter, error) {
	c, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	if v2, ok := c.(*chartv2.Chart); ok {
		err = chartutil.ProcessDependencies(v2, map[string]any{})
	}
	return c, err
}

// helmCapabilities are Helm's default capabilities serving the API
// versions and kinds stencil's offline render serves (Helm's list has no
// group/version/kind entries such as "policy/v1/PodDisruptionBudget"),
// so that both engines take the same branches of a chart.
var helmCapabilities = func() *common.Capabilities {
	caps := *common.DefaultCapabilities
	caps.APIVersions = common.VersionSet(templates.DefaultCapabilities().APIVersions)
	return &caps
}()

// HelmRender renders a loaded chart with Helm's engine, values prepared
// as `helm template` prepares them.
func HelmRender(c chart.Charter) (map[string]string, error) {
	opts := common.ReleaseOptions{Name: release.Name, Namespace: release.Namespace, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValuesWithSchemaValidation(c, map[string]any{}, opts, helmCapabilities, false)
	if err != nil {
		return nil, err
	}
	return engine.Render(c, vals)
}

// Case is one measurement: an engine rendering a chart, warm or cold.
type Case struct {
	Chart, Engine string
	Cold          bool
}

// Name is the case's sub-benchmark name.
func (c Case) Name() string {
	mode := "warm"
	if c.Cold {
		mode = "cold"
	}
	return c.Chart + "/" + mode + "/" + c.Engine
}

// Cases lists every measurement, stencil and Helm side by side.
func Cases() []Case {
	var cs []Case
	for _, ch := range Charts {
		for _, cold := range []bool{false, true} {
			for _, e := range []string{"stencil", "helm"} {
				cs = append(cs, Case{Chart: ch, Engine: e, Cold: cold})
			}
		}
	}
	return cs
}

// Run is the benchmark body of a case. Besides ns/op (wall time) it
// reports cpu-ns/op, the CPU time of the whole process (garbage collection
// included) per render, which other work on the machine does not inflate.
func (c Case) Run(b *testing.B) {
	dir, err := ChartDir(c.Chart)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := c.loop()(b, dir)
	if b.N > 0 && !b.Failed() {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// A renderLoop renders the chart folder dir b.N times and returns the CPU
// time its rounds took: a cold loop loads the chart in every round, a
// warm one once, before it starts counting.
type renderLoop func(b *testing.B, dir string) time.Duration

// loop is the case's renderLoop.
func (c Case) loop() renderLoop {
	switch {
	case c.Engine == "stencil" && c.Cold:
		return c.stencilCold
	case c.Engine == "stencil":
		return c.stencilWarm
	case c.Cold:
		return helmCold
	default:
		return helmWarm
	}
}

// stencilCold loads the chart as a Bundle and renders it, every round.
func (c Case) stencilCold(b *testing.B, dir string) time.Duration {
	start := cpuTime()
	for b.Loop() {
		bundle, err := c.stencilLoad(dir)
		if err == nil {
			_, err = StencilRender(bundle, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return cpuTime() - start
}

// stencilWarm loads the chart as a Bundle and keeps its values once, then
// renders it every round.
func (c Case) stencilWarm(b *testing.B, dir string) time.Duration {
	bundle, err := c.stencilLoad(dir)
	if err != nil {
		b.Fatal(err)
	}
	kept, err := keptValues(bundle)
	if err != nil {
		b.Fatal(err)
	}
	start := cpuTime()
	for b.Loop() {
		if _, err := StencilRender(bundle, kept); err != nil {
			b.Fatal(err)
		}
	}
	return cpuTime() - start
}

// helmCold loads the chart with Helm's loader and renders it, every round.
func helmCold(b *testing.B, dir string) time.Duration {
	start := cpuTime()
	for b.Loop() {
		ch, err := HelmLoad(dir)
		if err == nil {
			_, err = HelmRender(ch)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return cpuTime() - start
}

// helmWarm loads the chart with Helm's loader once, then renders it every
// round.
func helmWarm(b *testing.B, dir string) time.Duration {
	ch, err := HelmLoad(dir)
	if err != nil {
		b.Fatal(err)
	}
	start := cpuTime()
	for b.Loop() {
		if _, err := HelmRender(ch); err != nil {
			b.Fatal(err)
		}
	}
	return cpuTime() - start
}

// stencilLoad loads the chart folder dir as a Bundle, as TestCharts loads
// a chart of Suite (suiteLoad).
func (c Case) stencilLoad(dir string) (*templates.Bundle, error) {
	if s, ok := SuiteByName(c.Chart); ok {
		return suiteLoad(s, dir)
	}
	return StencilLoad(dir)
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	testing.Init()
	defer RemovePrometheus()
	defer RemoveSuite()
	if err := checkObjects(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "helmbench: %v\n", err)
		RemovePrometheus()
		RemoveSuite()
		os.Exit(1)
	}
	// Each case runs rounds times, interleaved with the others, and the
	// table shows its median round by CPU time: other work on a shared
	// machine disturbs single rounds, the median less.
	const rounds = 5
	results := map[string][]testing.BenchmarkResult{}
	for range rounds {
		for _, c := range Cases() {
			r := testing.Benchmark(c.Run)
			if r.N == 0 {
				fmt.Fprintf(os.Stderr, "helmbench: %s failed\n", c.Name())
				RemovePrometheus()
				RemoveSuite()
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "%-36s %s %s\n", c.Name(), r.String(), r.MemString())
			results[c.Name()] = append(results[c.Name()], r)
		}
	}
	medians := map[string]testing.BenchmarkResult{}
	for name, rs := range results {
		slices.SortFunc(rs, func(a, b testing.BenchmarkResult) int {
			return cmp.Compare(a.Extra["cpu-ns/op"], b.Extra["cpu-ns/op"])
		})
		medians[name] = rs[len(rs)/2]
	}
	printTable(os.Stdout, medians)
}

// checkObjects renders every chart with both engines before anything is
// measured and fails when stencil's object count is not `helm template`'s
// (see Objects); objects that differ otherwise are printed as a warning.
// A chart of Suite must render the same objects (CompareSuite).
func checkObjects(w io.Writer) error {
	for _, name := range Charts {
		if c, ok := SuiteByName(name); ok {
			got, err := CompareSuite(c)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if len(got.Diffs) > 0 {
				return fmt.Errorf("%s: stencil and Helm differ:\n%s", name, strings.Join(got.Diffs, "\n"))
			}
			fmt.Fprintf(w, "%s: %d objects in both, the same objects (%d with random fields masked)\n", name, got.Objects, len(got.Random))
			continue
		}
		s, h, err := Objects(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(s) != len(h) {
			return fmt.Errorf("%s: stencil renders %d objects, helm template %d", name, len(s), len(h))
		}
		same := "the same objects"
		if diff := gocmp.Diff(h, s); diff != "" {
			same = "objects that differ (-helm +stencil):\n" + diff
		}
		fmt.Fprintf(w, "%s: %d objects in both, %s\n", name, len(s), same)
	}
	return nil
}
