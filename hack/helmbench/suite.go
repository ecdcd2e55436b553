package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/stencil-dev/stencil/internal/gomodule"
)

// The suite is real, widely installed charts, each at a pinned commit of
// its publisher's repository, rendered by stencil and by Helm's engine and
// compared object by object (TestCharts, suite_compare.go).
//
// Each chart is fetched as a Go module: the repository at a version the
// Go module proxy serves, hash-pinned by its go.sum hash, cached in
// GOMODCACHE, so `make test` renders them offline once the cache holds
// them. The proxy serves any public GitHub repository, one without a
// go.mod too (at a pseudo-version of a commit, or at a tag, +incompatible
// past v1), so chart repositories such as prometheus-community's or
// bitnami/charts are fetched like any module (docs/helm.md, Real charts).

// Module is a Go module at a pinned version (its go.sum hash checked
// when it is fetched).
type Module = gomodule.Module

// Dependency is a dependency of a suite chart's Chart.yaml that `helm
// dependency build` would fetch from a chart repository: it is packaged
// from its own module instead.
type Dependency struct {
	// Name is the dependency's name in the parent's Chart.yaml.
	Name string
	// Module holds its chart; Dir is the chart's folder in the module.
	Module Module
	Dir    string
	// Placeholder: the repository's Chart.yaml holds a placeholder
	// version (v0.0.0) that the publisher's release workflow replaces,
	// so the chart is packaged with the version the parent asks for.
	Placeholder bool
	// OutOfRange: no version the proxy serves of the dependency's
	// repository holds a version in the parent's range, so the one it
	// holds is packaged as it is and the parent's Chart.yaml asks for
	// that version, for both engines (Helm would otherwise render it as a
	// subchart Chart.yaml does not declare, without its condition).
	OutOfRange bool
}

// SuiteChart is one chart of the suite.
type SuiteChart struct {
	// Name names the chart's subtest (TestCharts/NAME); Publisher is who
	// publishes it.
	Name, Publisher string
	// Module holds the chart; Dir is its folder in the module.
	Module Module
	Dir    string
	// Version is the chart's version, as its Chart.yaml says (checked).
	Version string
	// Deps are the dependencies packaged into charts/ from other modules.
	Deps []Dependency
	// Unserved are dependencies of Chart.yaml removed from it before
	// either engine reads it: disabled by the values rendered, and their
	// charts not fetched by the suite, so `helm dependency build` cannot
	// be reproduced for them: kyverno's reports-server 0.1.6 and
	// external-secrets' bitwarden-sdk-server v0.5.2 (OCI charts; their
	// repositories' modules at those versions could not be fetched), and
	// loki's minio 5.4.0 (charts.min.io, kept in MinIO's server
	// repository). Both engines render the same chart without them.
	Unserved []string
	// CRDs: the chart (or an enabled subchart) has a crds/ folder, which
	// Helm's `--include-crds` prints before the templates' objects; the
	// test fails when this is wrong, so that a chart whose CRDs are
	// compared says so.
	CRDs bool
	// Values, YAML, are given to both engines (`helm template -f`; the
	// Composition's values): a second case of a chart whose defaults
	// leave a dependency out. Empty: the chart's defaults.
	Values string
	// ValuesFile, a file of the chart's folder, holds the values instead
	// of Values: the publisher's own CI values, for a chart that renders
	// nothing without some (loki requires a storage).
	ValuesFile string
	// AllowNondeterministic loads the chart in stencil with stencil.yaml
	// `allowNondeterministic: true` (the Bundle's option; Helm's input is
	// unchanged): the chart calls now, which stencil refuses otherwise,
	// though what it prints does not depend on the time.
	AllowNondeterministic bool
}

// Modules pinned by the suite.
var (
	ingressNginx  = Module{Path: "k8s.io/ingress-nginx", Version: "v0.0.0-20240708192948-52c50467d67d", Sum: "h1:tZui5g6S4GO1hxLm6yrEoIXLkl4QfeGytlmZqZ+DmdQ="}
	metricsServer = Module{Path: "sigs.k8s.io/metrics-server", Version: "v0.9.0", Sum: "h1:nlqqZ2H0Xfko8eJC/1qaNVVT17hu4rxndkOi22KTZ4w="}
	certManager   = Module{Path: "github.com/cert-manager/cert-manager", Version: "v1.21.2", Sum: "h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68="}
	kyverno       = Module{Path: "github.com/kyverno/kyverno", Version: "v1.19.1", Sum: "h1:/MkgFii3/VlQfKR1JpC9tVwNNVNQTt2S4U6qCsafsTU="}
	kyvernoAPI    = Module{Path: "github.com/kyverno/api", Version: "v0.0.1-alpha.3.0.20260723090831-fb2785727f98", Sum: "h1:wGbyqQNc5wnHXq73aclvBje80lQvYDnqZCF967m+zEU="}
	openReports   = Module{Path: "github.com/openreports/reports-api", Version: "v0.2.1", Sum: "h1:g9KS3yle9Y1elmww4TK9EkD1rl6inIaiIJPX6e+u680="}
	extSecrets    = Module{Path: "github.com/external-secrets/external-secrets", Version: "v1.3.2", Sum: "h1:u2J8RjlHIeF0oZCqtl92adI/uZWUwOesJIDkfql6LqQ="}
	sealedSecrets = Module{Path: "github.com/bitnami-labs/sealed-secrets", Version: "v0.40.0", Sum: "h1:rvCP35JL8ZV5LNA2SrwNR6iLyoM3ulrSFWN0lBtYEYI="}
	istio         = Module{Path: "istio.io/istio", Version: "v0.0.0-20260827124520-eed52ebb66ad", Sum: "h1:ui9TJjRMAV/hb5ehQaZDq7IUGxuQP6dra9lapT/VjHI="}
	gatekeeper    = Module{Path: "github.com/open-policy-agent/gatekeeper/v3", Version: "v3.23.1", Sum: "h1:njHTm0SJ6ZEhhEgmQTpJKTGQbc99fSs4hGiEp1OIKck="}
	dapr          = Module{Path: "github.com/dapr/dapr", Version: "v1.14.0", Sum: "h1:SIQsNX1kH31JRDIS4k8IZ6eomM/BAcOP844PhQIT+BQ="}
	cilium        = Module{Path: "github.com/cilium/cilium", Version: "v1.20.2", Sum: "h1:dqiEGIcXc+gqCLYG/l7VCFJ8GHyb4HUrwbZOpkX5dL8="}
	promCommunity = Module{Path: PrometheusModule, Version: PrometheusVersion, Sum: PrometheusSum}
	grafana       = Module{Path: "github.com/grafana-community/helm-charts", Version: "v0.0.0-20260829030558-dbf9f4fb5fa1", Sum: "h1:vku2Qg2LpOqB0wMkzPLMfWL1f1LBTzBH4fVgSJ8+Zak="}
	bitnami       = Module{Path: "github.com/bitnami/charts", Version: "v0.0.0-20260907150927-c0703daaf78e", Sum: "h1:68EPXIo1ixa5DpWiY+3J97oIktp4QFXjACbpR/4saBQ="}
	argoHelm      = Module{Path: "github.com/argoproj/argo-helm", Version: "v0.0.0-20260904222229-3bbb4305eea9", Sum: "h1:WwVk8y5P+B0c9yiH8dF0VZtBHpsIWE9dq9osMjul8UM="}
	traefik       = Module{Path: "github.com/traefik/traefik-helm-chart", Version: "v41.6.0+incompatible", Sum: "h1:S2hlx62RaB97UEDu0NE2tSoNTWp7cOyHmI5zpdEHBH0="}
	keda          = Module{Path: "github.com/kedacore/charts", Version: "v2.20.3-0.20260903105638-fe065f4d8938+incompatible", Sum: "h1:WIGoemUjbTAZm85DxRAHHcTOxD15zoPIK9hYMf2s+F4="}
	grafanaLabs   = Module{Path: "github.com/grafana/helm-charts", Version: "v0.0.0-20260820194520-7a0ab968961a", Sum: "h1:cNDOtfJLumgS6a39wrg99KHg2xC/rQ1YeHpTWz40qws="}
	redisHA       = Module{Path: "github.com/DandyDeveloper/charts", Version: "v0.0.0-20260615041936-2e2539a8960e", Sum: "h1:koocmYkKXjQDEDC0QS3yoG4O8ylYvKHtqeYFanl5yiQ="}
	vault         = Module{Path: "github.com/hashicorp/vault-helm", Version: "v0.34.1", Sum: "h1:2uoVkbS+64x13G/92mbAPDPSvH6APcV7+jrQbhH+NqU="}
)

// bitnamiCommon is the common library every Bitnami chart depends on.
var bitnamiCommon = Dependency{Name: "common", Module: bitnami, Dir: "bitnami/common"}

// Suite is every chart TestCharts compares.
var Suite = []SuiteChart{
	{Name: "ingress-nginx", Publisher: "Kubernetes", Module: ingressNginx, Dir: "charts/ingress-nginx", Version: "4.11.0"},
	{Name: "metrics-server", Publisher: "Kubernetes", Module: metricsServer, Dir: "charts/metrics-server", Version: "3.13.1"},
	{Name: "cert-manager", Publisher: "cert-manager", Module: certManager, Dir: "deploy/charts/cert-manager", Version: "v0.0.0"},
	{Name: "kyverno", Publisher: "Kyverno", Module: kyverno, Dir: "charts/kyverno", Version: "3.9.1",
		Deps: []Dependency{
			{Name: "kyverno-api", Module: kyvernoAPI, Dir: "charts/kyverno-api", Placeholder: true},
			{Name: "openreports", Module: openReports, Dir: "charts/openreports", Placeholder: true},
		},
		Unserved: []string{"reports-server"}},
	{Name: "kyverno-policies", Publisher: "Kyverno", Module: kyverno, Dir: "charts/kyverno-policies", Version: "3.9.1"},
	{Name: "external-secrets", Publisher: "External Secrets", Module: extSecrets, Dir: "deploy/charts/external-secrets", Version: "1.3.1",
		Unserved: []string{"bitwarden-sdk-server"}},
	{Name: "sealed-secrets", Publisher: "Bitnami Labs", Module: sealedSecrets, Dir: "helm/sealed-secrets", Version: "2.19.3", CRDs: true},
	{Name: "istio-base", Publisher: "Istio", Module: istio, Dir: "manifests/charts/base", Version: "1.0.0"},
	{Name: "istiod", Publisher: "Istio", Module: istio, Dir: "manifests/charts/istio-control/istio-discovery", Version: "1.0.0"},
	{Name: "istio-gateway", Publisher: "Istio", Module: istio, Dir: "manifests/charts/gateway", Version: "1.0.0"},
	{Name: "istio-cni", Publisher: "Istio", Module: istio, Dir: "manifests/charts/istio-cni", Version: "1.0.0"},
	{Name: "ztunnel", Publisher: "Istio", Module: istio, Dir: "manifests/charts/ztunnel", Version: "1.0.0"},
	{Name: "gatekeeper", Publisher: "Open Policy Agent", Module: gatekeeper, Dir: "charts/gatekeeper", Version: "3.23.1", CRDs: true},
	{Name: "dapr", Publisher: "Dapr", Module: dapr, Dir: "charts/dapr", Version: "0.0.0", CRDs: true},
	// now | mustDateModify checks durations (templates/_helpers.tpl:107).
	{Name: "cilium", Publisher: "Cilium", Module: cilium, Dir: "install/kubernetes/cilium", Version: "1.20.2", AllowNondeterministic: true},
	// Its crds subchart is local (charts/crds, with a crds/ folder);
	// grafana 12.11.2 is not in grafana-community/helm-charts at the
	// version the proxy serves, which holds 13.0.1.
	{Name: "kube-prometheus-stack", Publisher: "Prometheus Community", Module: promCommunity, Dir: "charts/kube-prometheus-stack", Version: "88.6.1", CRDs: true,
		Deps: kubePrometheusStackDeps},
	// The CRD upgrade job on: its ConfigMap sends the crds subchart's
	// binary files/crds.bz2 as binaryData (.Files.Get | b64enc).
	{Name: "kube-prometheus-stack-crd-upgrade", Publisher: "Prometheus Community", Module: promCommunity, Dir: "charts/kube-prometheus-stack", Version: "88.6.1", CRDs: true,
		Deps: kubePrometheusStackDeps, Values: "crds:\n  upgradeJob:\n    enabled: true\n"},
	{Name: "postgresql", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/postgresql", Version: "17.1.1", Deps: []Dependency{bitnamiCommon}},
	{Name: "redis", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/redis", Version: "23.1.1", Deps: []Dependency{bitnamiCommon}},
	{Name: "mysql", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/mysql", Version: "14.0.5", Deps: []Dependency{bitnamiCommon}},
	{Name: "argo-cd", Publisher: "Argo", Module: argoHelm, Dir: "charts/argo-cd", Version: "10.8.0",
		Deps: []Dependency{{Name: "redis-ha", Module: redisHA, Dir: "charts/redis-ha"}}},
	{Name: "argo-cd-ha", Publisher: "Argo", Module: argoHelm, Dir: "charts/argo-cd", Version: "10.8.0",
		Deps:   []Dependency{{Name: "redis-ha", Module: redisHA, Dir: "charts/redis-ha"}},
		Values: "redis-ha:\n  enabled: true\n"},
	{Name: "grafana", Publisher: "Grafana Community", Module: grafana, Dir: "charts/grafana", Version: "13.0.1"},
	{Name: "traefik", Publisher: "Traefik Labs", Module: traefik, Dir: "traefik", Version: "41.6.0", CRDs: true},
	{Name: "keda", Publisher: "KEDA", Module: keda, Dir: "keda", Version: "2.20.2"},
	{Name: "vault", Publisher: "HashiCorp", Module: vault, Dir: ".", Version: "0.34.1"},
	{Name: "prometheus", Publisher: "Prometheus Community", Module: promCommunity, Dir: "charts/prometheus", Version: "29.27.0",
		Deps: []Dependency{
			{Name: "alertmanager", Module: promCommunity, Dir: "charts/alertmanager"},
			{Name: "kube-state-metrics", Module: promCommunity, Dir: "charts/kube-state-metrics"},
			{Name: "prometheus-node-exporter", Module: promCommunity, Dir: "charts/prometheus-node-exporter"},
			{Name: "prometheus-pushgateway", Module: promCommunity, Dir: "charts/prometheus-pushgateway"},
		}},
	{Name: "prometheus-operator-crds", Publisher: "Prometheus Community", Module: promCommunity, Dir: "charts/prometheus-operator-crds", Version: "31.0.1"},
	{Name: "prometheus-blackbox-exporter", Publisher: "Prometheus Community", Module: promCommunity, Dir: "charts/prometheus-blackbox-exporter", Version: "11.17.2"},
	{Name: "loki", Publisher: "Grafana Community", Module: grafana, Dir: "charts/loki", Version: "18.11.7",
		Deps:       []Dependency{{Name: "rollout-operator", Module: grafanaLabs, Dir: "charts/rollout-operator"}},
		Unserved:   []string{"minio"},
		ValuesFile: "ci/default-monolithic-filesystem-values.yaml"},
	{Name: "tempo", Publisher: "Grafana Community", Module: grafana, Dir: "charts/tempo", Version: "2.3.0"},
	{Name: "mongodb", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/mongodb", Version: "17.0.2", Deps: []Dependency{bitnamiCommon}},
	{Name: "rabbitmq", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/rabbitmq", Version: "16.0.16", Deps: []Dependency{bitnamiCommon}},
	{Name: "kafka", Publisher: "Bitnami", Module: bitnami, Dir: "bitnami/kafka", Version: "32.4.4", Deps: []Dependency{bitnamiCommon}},
	{Name: "argo-workflows", Publisher: "Argo", Module: argoHelm, Dir: "charts/argo-workflows", Version: "2.0.4"},
	{Name: "argo-rollouts", Publisher: "Argo", Module: argoHelm, Dir: "charts/argo-rollouts", Version: "2.43.0"},
}

// SuiteByName is the chart of Suite named name.
func SuiteByName(name string) (SuiteChart, bool) {
	i := slices.IndexFunc(Suite, func(c SuiteChart) bool { return c.Name == name })
	if i < 0 {
		return SuiteChart{}, false
	}
	return Suite[i], true
}

var assembled struct {
	mu   sync.Mutex
	tmp  string
	dirs map[string]string
}

// SuiteDir is the chart as `helm dependency build` leaves it, assembled
// once per process in a temporary folder RemoveSuite removes: the chart's
// folder of its module, each of Deps packaged into charts/ as `helm
// package` packs it, the Unserved dependencies removed from Chart.yaml.
// It fails unless every dependency Chart.yaml then declares is in
// charts/, as `helm template` requires.
func SuiteDir(c SuiteChart) (string, error) {
	assembled.mu.Lock()
	defer assembled.mu.Unlock()
	if dir, ok := assembled.dirs[c.Name]; ok {
		return dir, nil
	}
	if assembled.tmp == "" {
		tmp, err := os.MkdirTemp("", "helmbench-suite-")
		if err != nil {
			return "", err
		}
		assembled.tmp, assembled.dirs = tmp, map[string]string{}
	}
	dir := filepath.Join(assembled.tmp, c.Name)
	if err := assemble(c, dir); err != nil {
		return "", fmt.Errorf("%s: %w", c.Name, err)
	}
	assembled.dirs[c.Name] = dir
	return dir, nil
}

// RemoveSuite removes the folders SuiteDir assembled.
func RemoveSuite() {
	assembled.mu.Lock()
	defer assembled.mu.Unlock()
	if assembled.tmp != "" {
		_ = os.RemoveAll(assembled.tmp)
		assembled.tmp, assembled.dirs = "", nil
	}
}

func assemble(c SuiteChart, dir string) error {
	src, err := c.Module.Dir()
	if err != nil {
		return err
	}
	if err := gomodule.CopyTree(filepath.Join(src, filepath.FromSlash(c.Dir)), dir); err != nil {
		return err
	}
	chartfile := filepath.Join(dir, "Chart.yaml")
	meta, err := chartutil.LoadChartfile(chartfile)
	if err != nil {
		return err
	}
	if meta.Version != c.Version {
		return fmt.Errorf("%s@%s: %s is version %s, want %s", c.Module.Path, c.Module.Version, c.Dir, meta.Version, c.Version)
	}
	if len(c.Unserved) > 0 {
		n := len(meta.Dependencies)
		meta.Dependencies = slices.DeleteFunc(meta.Dependencies, func(d *chartv2.Dependency) bool { return slices.Contains(c.Unserved, d.Name) })
		if n-len(meta.Dependencies) != len(c.Unserved) {
			return fmt.Errorf("its Chart.yaml does not declare all of %v", c.Unserved)
		}
		if err := chartutil.SaveChartfile(chartfile, meta); err != nil {
			return err
		}
	}
	for _, d := range c.Deps {
		i := slices.IndexFunc(meta.Dependencies, func(m *chartv2.Dependency) bool { return m.Name == d.Name })
		if i < 0 {
			return fmt.Errorf("its Chart.yaml declares no dependency %s", d.Name)
		}
		depSrc, err := d.Module.Dir()
		if err != nil {
			return err
		}
		if err := packageDependencyAs(filepath.Join(depSrc, filepath.FromSlash(d.Dir)), meta.Dependencies[i], filepath.Join(dir, "charts"), d.Placeholder, d.OutOfRange); err != nil {
			return err
		}
		if d.OutOfRange {
			sub, err := chartutil.LoadChartfile(filepath.Join(depSrc, filepath.FromSlash(d.Dir), "Chart.yaml"))
			if err != nil {
				return err
			}
			meta.Dependencies[i].Version = sub.Version
			if err := chartutil.SaveChartfile(chartfile, meta); err != nil {
				return err
			}
		}
	}
	return checkDependencies(dir)
}

// checkDependencies fails, as `helm template` does (action.CheckDependencies),
// when a dependency the chart folder dir declares is not in its charts/.
func checkDependencies(dir string) error {
	c, err := loaderv2.LoadDir(dir)
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range c.Metadata.Dependencies {
		if !slices.ContainsFunc(c.Dependencies(), func(sub *chartv2.Chart) bool { return sub.Name() == d.Name }) {
			missing = append(missing, d.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %v", missing)
	}
	return nil
}

// kubePrometheusStackDeps are kube-prometheus-stack's dependencies, as
// its Chart.yaml names them (its crds subchart is in its folder).
var kubePrometheusStackDeps = []Dependency{
	{Name: "kube-state-metrics", Module: promCommunity, Dir: "charts/kube-state-metrics"},
	{Name: "prometheus-node-exporter", Module: promCommunity, Dir: "charts/prometheus-node-exporter"},
	{Name: "grafana", Module: grafana, Dir: "charts/grafana", OutOfRange: true},
	{Name: "prometheus-windows-exporter", Module: promCommunity, Dir: "charts/prometheus-windows-exporter"},
}
