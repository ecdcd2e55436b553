package source

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Bounds and defaults of a pull.
const (
	// MaxArchiveSize bounds a chart archive as pulled (compressed):
	// 20 MiB. What it unpacks to is bounded by chart.MaxArchiveBytes and
	// chart.MaxArchiveFiles.
	MaxArchiveSize = 20 << 20
	// MaxProvenanceSize bounds a chart's provenance file (.prov).
	MaxProvenanceSize = 1 << 20
	// DefaultInterval is how often a tag or a version range is resolved
	// again when spec.source.interval is unset.
	DefaultInterval = 10 * time.Minute
	// DefaultTimeout bounds one pull when the context has no deadline.
	DefaultTimeout = 2 * time.Minute
)

// Media types of a Helm chart stored as an OCI artifact.
const (
	// MediaTypeConfig is the config blob's media type.
	MediaTypeConfig = "application/vnd.cncf.helm.config.v1+json"
	// MediaTypeChart is the chart archive layer's media type.
	MediaTypeChart = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// MediaTypeProvenance is the provenance layer's media type.
	MediaTypeProvenance = "application/vnd.cncf.helm.chart.provenance.v1.prov"
)

// Artifact is a pulled chart.
type Artifact struct {
	// URL is where the chart was pulled from: oci://HOST/PATH@sha256:HEX
	// (pinned by the manifest's digest) or the chart archive's URL.
	URL string
	// Version is the chart's version (Chart.yaml's).
	Version string
	// Digest is the chart archive's sha256 digest, sha256:HEX.
	Digest string
	// ManifestDigest is the OCI manifest's digest (OCI only).
	ManifestDigest string
	// Size is the chart archive's size in bytes.
	Size int64
	// Files is the chart unpacked as a Bundle's spec.files holds it, its
	// charts/*.tgz unpacked too.
	Files map[string]string
	// Archive is the chart archive as pulled; nil for an Artifact from
	// the Cache.
	Archive []byte
	// ProvenanceURL and Provenance are the chart's provenance file
	// (CHART.tgz.prov), pulled from a chart repository when
	// spec.verify.provider is helm (and verified).
	ProvenanceURL string
	Provenance    []byte
	// KeysFingerprint, with spec.source.verify, is the Fingerprint of the
	// keys the chart's signature verified with.
	KeysFingerprint string
	// RemoteOptions are the options the OCI pull used (credentials,
	// transport with the CA, context), for further requests to the same
	// registry such as a signature's (OCI only).
	RemoteOptions []remote.Option
}

// Options tune a pull.
type Options struct {
	// MaxSize bounds the chart archive; MaxArchiveSize when 0.
	MaxSize int64
	// Pin, when set, pulls the chart status.source recorded (its URL,
	// checked against the spec, and its digest) instead of resolving the
	// spec's tag or range again: a restarted controller renders what it
	// rendered before.
	Pin *v1alpha1.SourceStatus
	// Cache, when set, is looked up by digest before a chart is
	// downloaded and keeps what is pulled.
	Cache *Cache
	// Policy is where the pull may go: its zero value refuses loopback,
	// private and link-local addresses and redirects to other hosts (the
	// controller's default); the command line pulls with AnyAddress.
	Policy Policy
}

func (o Options) maxSize() int64 {
	if o.MaxSize > 0 {
		return o.MaxSize
	}
	return MaxArchiveSize
}

// Reasons of a failed pull, for a Bundle's SourceReady condition.
const (
	// ReasonPullFailed: the registry or repository could not be reached,
	// or answered with an error.
	ReasonPullFailed = "PullFailed"
	// ReasonUnauthorized: the registry or repository refused the
	// credentials (or their absence).
	ReasonUnauthorized = "Unauthorized"
	// ReasonNotFound: no such chart, tag, version or digest.
	ReasonNotFound = "NotFound"
	// ReasonDigestMismatch: what was pulled is not what its digest says.
	ReasonDigestMismatch = "DigestMismatch"
	// ReasonTooLarge: the chart archive is over the size bound, or
	// unpacks to more than the archive bounds; or a chart repository's
	// index is over MaxIndexSize, or the chart's entry in it over
	// MaxIndexEntrySize.
	ReasonTooLarge = "TooLarge"
	// ReasonInvalidChart: the artifact is not a Helm chart, or its
	// archive holds a link, a path outside the chart or no Chart.yaml.
	ReasonInvalidChart = "InvalidChart"
	// ReasonURLRefused: the chart lives at a URL other than the one the
	// Bundle names (another host, not https).
	ReasonURLRefused = "URLRefused"
	// ReasonSecretRefused: a Secret spec.source names may not be used
	// for it: its credentials are not for the host the source names (the
	// credentials Secret's key hosts, or its .dockerconfigjson entries),
	// or the host a request would carry them to, or it is not a Secret
	// the cluster admin marked for Bundle sources, or not of a type that
	// holds credentials. The credentials are not sent.
	ReasonSecretRefused = "SecretRefused"
	// ReasonInvalidSource: spec.source cannot be read (no source, a
	// reference that does not parse, a version range that does not).
	ReasonInvalidSource = "InvalidSource"
	// ReasonUnsigned: spec.source.verify is set and the chart carries no
	// signature (no cosign signature manifest, no provenance file).
	ReasonUnsigned = "Unsigned"
	// ReasonSignatureInvalid: spec.source.verify is set and the chart's
	// signature does not verify with the keys given, or signs another
	// chart.
	ReasonSignatureInvalid = "SignatureInvalid"
	// ReasonInvalidKey: the key material spec.source.verify's Secret holds
	// does not parse.
	ReasonInvalidKey = "InvalidKey"
)

// Interval is how often spec's tag or range is resolved again.
func Interval(spec v1alpha1.BundleSource) time.Duration {
	if spec.Interval != nil && spec.Interval.Duration > 0 {
		return spec.Interval.Duration
	}
	return DefaultInterval
}

// Fetch resolves spec (or opts.Pin) to one chart, pulls it with creds,
// verifies its digest and unpacks it. When spec.Verify is set, it also
// verifies the chart's signature with creds.VerifyKeys (a pin and a
// cache hit too): a chart that fails is neither returned nor cached.
// Every error is an *Error.
func Fetch(ctx context.Context, spec v1alpha1.BundleSource, creds Credentials, opts Options) (*Artifact, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	if err := checkVerify(spec, creds); err != nil {
		return nil, err
	}
	var (
		a   *Artifact
		err error
	)
	switch {
	case spec.OCI != "" && spec.ChartRepository == nil:
		a, err = fetchOCI(ctx, spec, creds, opts)
	case spec.ChartRepository != nil && spec.OCI == "":
		a, err = fetchRepo(ctx, spec, creds, opts)
	default:
		return nil, fail(ReasonInvalidSource, nil, "spec.source: exactly one of oci and chartRepository must be set")
	}
	if err != nil {
		return nil, err
	}
	if spec.Verify != nil {
		a.KeysFingerprint = Fingerprint(creds.VerifyKeys)
	}
	return a, nil
}

// Fingerprint is the sha256 of key material, sha256:HEX: what a
// verification recorded in status.source is tied to.
func Fingerprint(keys []byte) string {
	return digestOf(keys)
}
