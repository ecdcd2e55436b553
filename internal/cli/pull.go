package cli

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/templates"
)

// pullFlags name a chart in a registry, as helm template's do: --bundle
// oci://HOST/PATH:TAG (or @sha256:HEX), or a chart repository as --repo
// URL --chart NAME [--version V] (the same as --bundle URL#NAME[@V]),
// with --username, --password and --ca-file for the registry.
type pullFlags struct {
	repo, chart, version string
	username, password   string
	caFile               string
	// pulled keeps what was pulled, by the argument naming it.
	pulled map[string]*source.Artifact
}

func (p *pullFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&p.repo, "repo", "", "chart repository URL (https) to pull --chart from, instead of --bundle")
	fl.StringVar(&p.chart, "chart", "", "with --repo: the chart's name in the repository's index")
	fl.StringVar(&p.version, "version", "", "with --repo: the chart's version or a semver range (newest stable when empty)")
	fl.StringVar(&p.username, "username", "", "username for the OCI registry or chart repository")
	fl.StringVar(&p.password, "password", "", "password for the OCI registry or chart repository (or $STENCIL_REGISTRY_PASSWORD)")
	fl.StringVar(&p.caFile, "ca-file", "", "PEM file of the CA that verifies the registry's or repository's certificate (default: the system's)")
}

// bundleArg is the bundle to load: bundle, or the chart repository form
// URL#CHART[@VERSION] of --repo, --chart and --version.
func (p *pullFlags) bundleArg(bundle string) (string, error) {
	switch {
	case p.repo == "" && (p.chart != "" || p.version != ""):
		return "", fmt.Errorf("--chart and --version need --repo")
	case p.repo == "":
		return bundle, nil
	case bundle != "":
		return "", fmt.Errorf("--repo and --bundle are exclusive: give one")
	case p.chart == "":
		return "", fmt.Errorf("--repo needs --chart")
	}
	arg := p.repo + "#" + p.chart
	if p.version != "" {
		arg += "@" + p.version
	}
	return arg, nil
}

// parseSourceArg reads a --bundle (or pack) argument that names a chart
// in a registry: oci://HOST/PATH:TAG, oci://HOST/PATH@sha256:HEX, or
// https://REPO#CHART[@VERSION]. It returns the source and the Bundle's
// name (the chart's), and ok false for a folder or a manifest.
func parseSourceArg(arg string) (src *v1alpha1.BundleSource, name string, ok bool, err error) {
	switch {
	case strings.HasPrefix(arg, "oci://"):
		ref, err := source.ParseOCI(arg)
		if err != nil {
			return nil, "", true, fmt.Errorf("%s: %w", arg, err)
		}
		return &v1alpha1.BundleSource{OCI: arg}, path.Base(ref.Context().RepositoryStr()), true, nil
	case strings.HasPrefix(arg, "https://") || strings.HasPrefix(arg, "http://"):
		repo, chart, found := strings.Cut(arg, "#")
		if !found || chart == "" {
			return nil, "", true, fmt.Errorf("%s: a chart repository is given as URL#CHART[@VERSION] (or --repo URL --chart CHART --version V)", arg)
		}
		chart, version, _ := strings.Cut(chart, "@")
		return &v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo, Chart: chart, Version: version}}, chart, true, nil
	}
	return nil, "", false, nil
}

// credentials are the flags' credentials and CA.
func (p *pullFlags) credentials() (source.Credentials, error) {
	c := source.Credentials{Username: p.username, Password: p.password}
	if c.Password == "" {
		c.Password = os.Getenv("STENCIL_REGISTRY_PASSWORD")
	}
	if p.caFile != "" {
		ca, err := os.ReadFile(p.caFile)
		if err != nil {
			return c, fmt.Errorf("--ca-file: %w", err)
		}
		c.CA = ca
	}
	return c, nil
}

// fetch pulls the chart arg names (once per command), with the checks
// and bounds the controller pulls with.
func (p *pullFlags) fetch(ctx context.Context, arg string, src *v1alpha1.BundleSource) (*source.Artifact, error) {
	if a, ok := p.pulled[arg]; ok {
		return a, nil
	}
	creds, err := p.credentials()
	if err != nil {
		return nil, err
	}
	a, err := source.Fetch(ctx, *src, creds, source.Options{})
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", arg, err)
	}
	if p.pulled == nil {
		p.pulled = map[string]*source.Artifact{}
	}
	p.pulled[arg] = a
	return a, nil
}

// loadPulled pulls the chart arg names and loads it as a Bundle named
// name, as the controller loads a Bundle with that source.
func (p *pullFlags) loadPulled(ctx context.Context, arg, name string, src *v1alpha1.BundleSource) (*templates.Bundle, error) {
	a, err := p.fetch(ctx, arg, src)
	if err != nil {
		return nil, err
	}
	b := &v1alpha1.Bundle{}
	b.Name = name
	b.Spec.Files = a.Files
	return templates.LoadObject(b)
}
