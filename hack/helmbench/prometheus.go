package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/Masterminds/semver/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/stencil-dev/stencil/internal/gomodule"
)

// The prometheus chart is measured as published: the prometheus-community
// helm-charts repository, fetched through the Go module proxy (which
// serves a repository without a go.mod as a module at a pseudo-version;
// the zip, about 2.4 MB, is cached in GOMODCACHE and checked against
// go.sum's checksum database like any module), pinned here.
const (
	// PrometheusModule is the repository holding the prometheus chart and
	// its four dependencies under charts/.
	PrometheusModule = "github.com/prometheus-community/helm-charts"
	// PrometheusVersion pins it: commit ed5d7d9b5933 of 2026-08-28, with
	// prometheus 29.27.0, alertmanager 1.42.0, kube-state-metrics 8.4.1,
	// prometheus-node-exporter 4.56.1 and prometheus-pushgateway 3.8.0.
	PrometheusVersion = "v0.0.0-20260828105119-ed5d7d9b5933"
	// PrometheusSum is the module's go.sum hash at that version: what was
	// measured is what is measured again, whatever proxy serves it.
	PrometheusSum = "h1:5+f9HcKpurn9DWdl0b8PsT7TkEzfCDwcx2KbWYnrnPU="
)

// Prometheus is the name of the assembled chart in Charts and the table.
const Prometheus = "prometheus"

var prometheus struct {
	once sync.Once
	dir  string
	err  error
}

// PrometheusDir is the prometheus chart as `helm dependency build` leaves
// it: charts/prometheus of the pinned repository with each dependency of
// its Chart.yaml packaged as `helm package` packs it (Helm's loader, so
// .helmignore applies, and chartutil.Save) into its charts/ folder as
// NAME-VERSION.tgz. Each dependency's version must satisfy the range the
// parent declares. The folder is assembled once per process, in a
// temporary folder RemovePrometheus removes.
func PrometheusDir() (string, error) {
	prometheus.once.Do(func() { prometheus.dir, prometheus.err = assemblePrometheus() })
	return prometheus.dir, prometheus.err
}

// RemovePrometheus removes the folder PrometheusDir assembled, if any.
func RemovePrometheus() {
	if prometheus.dir != "" {
		_ = os.RemoveAll(filepath.Dir(prometheus.dir))
	}
}

func assemblePrometheus() (string, error) {
	src, err := promCommunity.Dir()
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "helmbench-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, Prometheus)
	if err := gomodule.CopyTree(filepath.Join(src, "charts", Prometheus), dir); err != nil {
		return "", err
	}
	meta, err := chartutil.LoadChartfile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	if len(meta.Dependencies) != 4 {
		return "", fmt.Errorf("%s@%s: charts/prometheus declares %d dependencies, want 4", PrometheusModule, PrometheusVersion, len(meta.Dependencies))
	}
	for _, d := range meta.Dependencies {
		if err := packageDependency(filepath.Join(src, "charts", d.Name), d, filepath.Join(dir, "charts")); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// packageDependency packs the chart folder dir into charts as `helm
// package` would, after checking it is the dependency d asks for.
func packageDependency(dir string, d *chartv2.Dependency, charts string) error {
	return packageDependencyAs(dir, d, charts, false, false)
}

// packageDependencyAs is packageDependency; with placeholder, the chart's
// version must be the placeholder v0.0.0 and is packaged as the exact
// version d asks for, as its publisher's release workflow sets it; with
// outOfRange, its version must be outside d's range and is kept.
func packageDependencyAs(dir string, d *chartv2.Dependency, charts string, placeholder, outOfRange bool) error {
	c, err := loaderv2.LoadDir(dir)
	if err != nil {
		return fmt.Errorf("dependency %s: %w", d.Name, err)
	}
	if placeholder {
		if c.Metadata.Version != "v0.0.0" {
			return fmt.Errorf("dependency %s: version %s, not the placeholder v0.0.0", d.Name, c.Metadata.Version)
		}
		if _, err := semver.StrictNewVersion(d.Version); err != nil {
			return fmt.Errorf("dependency %s: %q is not one version: %w", d.Name, d.Version, err)
		}
		c.Metadata.Version = d.Version
	}
	want, err := semver.NewConstraint(d.Version)
	if err != nil {
		return fmt.Errorf("dependency %s: version range %q: %w", d.Name, d.Version, err)
	}
	got, err := semver.NewVersion(c.Metadata.Version)
	if err != nil {
		return fmt.Errorf("dependency %s: version %q: %w", d.Name, c.Metadata.Version, err)
	}
	if c.Name() != d.Name || want.Check(got) == outOfRange {
		return fmt.Errorf("dependency %s %s: the repository has %s %s (out of range: %v)", d.Name, d.Version, c.Name(), c.Metadata.Version, outOfRange)
	}
	_, err = chartutil.Save(c, charts)
	return err
}
