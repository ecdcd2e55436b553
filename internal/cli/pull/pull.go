package pull

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

// Flags name a chart in a registry, as helm template's do: --bundle
// oci://HOST/PATH:TAG (or @sha256:HEX), or a chart repository as --repo
// URL --chart NAME [--version V] (the same as --bundle URL#NAME[@V]),
// with --username, --password and --ca-file for the registry, and
// --verify cosign|helm --verify-key FILE for the chart's signature (as a
// Bundle's spec.source.verify).
type Flags struct {
	repo, chart, version string
	username, password   string
	caFile               string
	verify, verifyKey    string
	// plainHTTP lets an OCI registry be reached over http (--plain-http).
	plainHTTP bool
	// pulled keeps what was pulled, by the argument naming it.
	pulled map[string]*source.Artifact
}

// Add adds the flags to fl.
func (p *Flags) Add(fl *pflag.FlagSet) {
	fl.StringVar(&p.repo, "repo", "", "chart repository URL (https) to pull --chart from, instead of --bundle")
	fl.StringVar(&p.chart, "chart", "", "with --repo: the chart's name in the repository's index")
	fl.StringVar(&p.version, "version", "", "with --repo: the chart's version or a semver range (newest stable when empty)")
	fl.StringVar(&p.username, "username", "", "username for the OCI registry or chart repository")
	fl.StringVar(&p.password, "password", "", "password for the OCI registry or chart repository (or $STENCIL_REGISTRY_PASSWORD)")
	fl.StringVar(&p.caFile, "ca-file", "", "PEM file of the CA that verifies the registry's or repository's certificate (default: the system's)")
	fl.StringVar(&p.verify, "verify", "", "require the chart's signature: cosign (an OCI chart's cosign signature) or helm (a chart repository's provenance file), checked with --verify-key")
	fl.BoolVar(&p.plainHTTP, "plain-http", false, "reach the OCI registry over http, as helm --plain-http (a local registry; credentials go in clear text). The controller always uses https")
	fl.StringVar(&p.verifyKey, "verify-key", "", "with --verify, or for a Bundle manifest whose spec.source.verify is set: file of the PEM public key(s) (cosign.pub) or the OpenPGP keyring (helm)")
}

// verification is src as pulled: with --verify, its verify provider is
// --verify's; a source that is to be verified (by --verify or its own
// spec.source.verify) needs --verify-key, whose content is returned.
func (p *Flags) verification(src *v1alpha1.BundleSource) (*v1alpha1.BundleSource, []byte, error) {
	switch p.verify {
	case "":
	case source.ProviderCosign, source.ProviderHelm:
		c := *src
		c.Verify = &v1alpha1.SourceVerification{Provider: p.verify}
		src = &c
	default:
		return nil, nil, fmt.Errorf("--verify: must be cosign or helm")
	}
	if src.Verify == nil {
		if p.verifyKey != "" {
			return nil, nil, fmt.Errorf("--verify-key needs --verify cosign|helm (or a Bundle whose spec.source.verify is set)")
		}
		return src, nil, nil
	}
	if p.verifyKey == "" {
		if p.verify != "" {
			return nil, nil, fmt.Errorf("--verify %s needs --verify-key FILE (%s)", p.verify, verifyKeyKind(p.verify))
		}
		return nil, nil, fmt.Errorf("spec.source.verify (provider %s) needs the key: give --verify-key FILE (%s, as the Secret %s holds in its key %s)",
			src.Verify.Provider, verifyKeyKind(src.Verify.Provider), src.Verify.SecretRef.Name, source.VerifyKey(src.Verify.Provider))
	}
	keys, err := os.ReadFile(p.verifyKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--verify-key: %w", err)
	}
	return src, keys, nil
}

func verifyKeyKind(provider string) string {
	if provider == source.ProviderHelm {
		return "an OpenPGP keyring"
	}
	return "PEM public keys, as cosign.pub"
}

// BundleArg is the bundle to load: bundle, or the chart repository form
// URL#CHART[@VERSION] of --repo, --chart and --version.
func (p *Flags) BundleArg(bundle string) (string, error) {
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

// ParseSource reads a --bundle (or pack) argument that names a chart
// in a registry: oci://HOST/PATH:TAG, oci://HOST/PATH@sha256:HEX, or
// https://REPO#CHART[@VERSION]. It returns the source and the Bundle's
// name (the chart's), and ok false for a folder or a manifest.
func ParseSource(arg string) (src *v1alpha1.BundleSource, name string, ok bool, err error) {
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
func (p *Flags) credentials() (source.Credentials, error) {
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
// and bounds the controller pulls with, its signature verified as
// --verify or src.Verify asks.
func (p *Flags) fetch(ctx context.Context, arg string, src *v1alpha1.BundleSource) (*source.Artifact, error) {
	if a, ok := p.pulled[arg]; ok {
		return a, nil
	}
	creds, err := p.credentials()
	if err != nil {
		return nil, err
	}
	if src, creds.VerifyKeys, err = p.verification(src); err != nil {
		return nil, err
	}
	// The user's own pull, on their own network: any address (a
	// registry on localhost, the office's), where the controller reaches
	// only what the cluster admin allows.
	policy := source.AnyAddress()
	policy.PlainHTTP = p.plainHTTP
	a, err := source.Fetch(ctx, *src, creds, source.Options{Policy: policy})
	if err != nil {
		return nil, fmt.Errorf("pull %s: %w", arg, err)
	}
	if p.pulled == nil {
		p.pulled = map[string]*source.Artifact{}
	}
	p.pulled[arg] = a
	return a, nil
}

// Load pulls the chart arg names and loads it as a Bundle named
// name, as the controller loads a Bundle with that source.
func (p *Flags) Load(ctx context.Context, arg, name string, src *v1alpha1.BundleSource) (*templates.Bundle, error) {
	a, err := p.fetch(ctx, arg, src)
	if err != nil {
		return nil, err
	}
	b := &v1alpha1.Bundle{}
	b.Name = name
	b.Spec.Files = a.Files
	return templates.LoadObject(b)
}
