package source

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// ociScheme prefixes an OCI reference in a Bundle.
const ociScheme = "oci://"

// ParseOCI parses oci://HOST/PATH:TAG or oci://HOST/PATH@sha256:HEX. A
// reference needs a tag or a digest: there is no implied latest.
func ParseOCI(ref string) (name.Reference, error) {
	rest, ok := strings.CutPrefix(ref, ociScheme)
	if !ok {
		return nil, fail(ReasonInvalidSource, nil, "spec.source.oci: must start with oci://")
	}
	r, err := name.ParseReference(rest, name.StrictValidation)
	if err != nil {
		return nil, fail(ReasonInvalidSource, err, "spec.source.oci: needs HOST/PATH:TAG or HOST/PATH@sha256:HEX")
	}
	return r, nil
}

// fetchOCI pulls the Helm chart spec.OCI names: its manifest (verified
// against the digest the reference pins, if any), whose config must be a
// Helm chart config and whose one chart layer is pulled and verified
// against the digest the manifest gives.
func fetchOCI(ctx context.Context, spec v1alpha1.BundleSource, creds Credentials, opts Options) (*Artifact, error) {
	ref, err := ociRef(spec.OCI, opts)
	if err != nil {
		return nil, err
	}
	ropts, err := remoteOptions(ctx, ref.Context().RegistryStr(), creds, opts.Policy)
	if err != nil {
		return nil, err
	}
	desc, m, err := pullManifest(ref, spec.OCI, ropts)
	if err != nil {
		return nil, err
	}
	layer, err := chartLayer(m, spec.OCI)
	if err != nil {
		return nil, err
	}
	url := ociScheme + ref.Context().Digest(desc.Digest.String()).String()
	if opts.Pin != nil && opts.Pin.Digest != "" && layer.Digest.String() != opts.Pin.Digest {
		return nil, fail(ReasonDigestMismatch, nil, "%s: the chart layer's digest is %s, not %s as status.source recorded", url, layer.Digest, opts.Pin.Digest)
	}
	// The signature covers the manifest, the manifest the layer's digest:
	// checked before the cache is looked up or the layer pulled, so a
	// cache hit and a pull by a pinned digest are verified too.
	if spec.Verify != nil {
		if err := verifyCosign(ctx, ref, desc.Digest.String(), creds.VerifyKeys, ropts); err != nil {
			return nil, err
		}
	}
	if opts.Cache != nil {
		if a, ok := opts.Cache.Get(layer.Digest.String()); ok {
			return withOCI(a, url, desc.Digest.String(), ropts), nil
		}
	}
	if layer.Size > opts.maxSize() || layer.Size < 0 {
		return nil, fail(ReasonTooLarge, nil, "%s: the chart archive is %d bytes, over the bound of %d (MaxArchiveSize)", spec.OCI, layer.Size, opts.maxSize())
	}
	data, err := pullLayer(ref.Context().Digest(layer.Digest.String()), layer.Size, ropts)
	if err != nil {
		return nil, err
	}
	if got, _, _ := v1.SHA256(bytes.NewReader(data)); got != layer.Digest {
		return nil, fail(ReasonDigestMismatch, nil, "%s: the chart archive's digest is %s, the manifest says %s", spec.OCI, got, layer.Digest)
	}
	a, err := newArtifact(data, opts.maxSize())
	if err != nil {
		return nil, err
	}
	if opts.Cache != nil {
		opts.Cache.Add(a)
	}
	return withOCI(a, url, desc.Digest.String(), ropts), nil
}

// ociRef is the reference to pull for spec.oci: the one status.source
// pinned, when it is in the same repository, reached over http when the
// policy says so.
func ociRef(oci string, opts Options) (name.Reference, error) {
	ref, err := ParseOCI(oci)
	if err != nil {
		return nil, err
	}
	if opts.Pin != nil && opts.Pin.URL != "" {
		pinned, err := ParseOCI(opts.Pin.URL)
		if err != nil || pinned.Context().String() != ref.Context().String() {
			return nil, fail(ReasonURLRefused, nil, "status.source.url is not in the repository spec.source.oci names")
		}
		ref = pinned
	}
	if opts.Policy.PlainHTTP {
		// The registry is reached over http, whatever its address.
		if ref, err = name.ParseReference(ref.String(), name.StrictValidation, name.Insecure); err != nil {
			return nil, fail(ReasonInvalidSource, err, "spec.source.oci: needs HOST/PATH:TAG or HOST/PATH@sha256:HEX")
		}
	}
	return ref, nil
}

// pullManifest pulls ref's manifest and checks it against its digest:
// the one ref pins, if any, and the one the registry gives.
func pullManifest(ref name.Reference, oci string, ropts []remote.Option) (*remote.Descriptor, *v1.Manifest, error) {
	desc, err := remote.Get(ref, ropts...)
	if err != nil {
		return nil, nil, remoteError(err, "pull the manifest of %s", oci)
	}
	if d, ok := ref.(name.Digest); ok && desc.Digest.String() != d.DigestStr() {
		return nil, nil, fail(ReasonDigestMismatch, nil, "the manifest of %s has digest %s", oci, desc.Digest)
	}
	if got, _, err := v1.SHA256(bytes.NewReader(desc.Manifest)); err != nil || got != desc.Digest {
		return nil, nil, fail(ReasonDigestMismatch, nil, "the manifest of %s is not what its digest %s says", oci, desc.Digest)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, nil, fail(ReasonInvalidChart, err, "%s: not an OCI image manifest", oci)
	}
	return desc, m, nil
}

// chartLayer is the one chart layer of m, whose config must be a Helm
// chart's.
func chartLayer(m *v1.Manifest, oci string) (*v1.Descriptor, error) {
	if string(m.Config.MediaType) != MediaTypeConfig {
		return nil, fail(ReasonInvalidChart, nil, "%s is not a Helm chart: its config's media type is %q, not %s", oci, m.Config.MediaType, MediaTypeConfig)
	}
	var layer *v1.Descriptor
	for i := range m.Layers {
		if string(m.Layers[i].MediaType) == MediaTypeChart {
			if layer != nil {
				return nil, fail(ReasonInvalidChart, nil, "%s has more than one chart layer (%s)", oci, MediaTypeChart)
			}
			layer = &m.Layers[i]
		}
	}
	if layer == nil {
		return nil, fail(ReasonInvalidChart, nil, "%s has no chart layer (%s)", oci, MediaTypeChart)
	}
	return layer, nil
}

// withOCI is a copy of a with the OCI pull's details.
func withOCI(a *Artifact, url, manifest string, ropts []remote.Option) *Artifact {
	c := *a
	c.URL, c.ManifestDigest, c.RemoteOptions = url, manifest, ropts
	return &c
}

// pullLayer reads the blob d of size bytes, and no more.
func pullLayer(d name.Digest, size int64, ropts []remote.Option) ([]byte, error) {
	l, err := remote.Layer(d, ropts...)
	if err != nil {
		return nil, remoteError(err, "pull the chart archive %s", d)
	}
	// Compressed is the blob as stored; go-containerregistry checks its
	// digest as the last byte is read, so a read that got every byte and
	// then failed is a digest mismatch (the caller checks it again).
	rc, err := l.Compressed()
	if err != nil {
		return nil, remoteError(err, "pull the chart archive %s", d)
	}
	// Read only: what a read got is checked below; Close adds nothing.
	defer func() { _ = rc.Close() }()
	data, err := io.ReadAll(io.LimitReader(rc, size+1))
	switch {
	case err != nil && int64(len(data)) == size:
		return nil, fail(ReasonDigestMismatch, nil, "the chart archive %s is not what its digest says", d)
	case err != nil:
		return nil, remoteError(err, "pull the chart archive %s", d)
	case int64(len(data)) != size:
		return nil, fail(ReasonDigestMismatch, nil, "the chart archive %s is not %d bytes, as the manifest says", d, size)
	}
	return data, nil
}

// RemoteOptions are the options of a pull from registry with creds under
// policy: its authentication, an https-only transport trusting creds.CA
// that checks every address and redirect against policy, ctx, and few
// retries (a Bundle's pull is retried by the controller).
func RemoteOptions(ctx context.Context, registry string, creds Credentials, policy Policy) ([]remote.Option, error) {
	return remoteOptions(ctx, registry, creds, policy)
}

func remoteOptions(ctx context.Context, registry string, creds Credentials, policy Policy) ([]remote.Option, error) {
	auth, err := creds.authenticator(registry)
	if err != nil {
		return nil, err
	}
	t, err := creds.transport(policy)
	if err != nil {
		return nil, fail(ReasonPullFailed, nil, "%s", err.Error())
	}
	return []remote.Option{
		remote.WithContext(ctx), remote.WithAuth(auth),
		remote.WithTransport(redirects{next: t, host: registry, allow: policy.AllowRedirects}),
		remote.WithRetryBackoff(remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 2}),
		remote.WithUserAgent("stencil"),
	}, nil
}
