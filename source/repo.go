package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// fetchRepo pulls the chart spec.ChartRepository names: the newest
// version of the index that matches the version (or range), from the
// entry's first URL, which must be on the repository's host; its digest
// is checked against the entry's, when the entry has one.
func fetchRepo(ctx context.Context, spec v1alpha1.BundleSource, creds Credentials, opts Options) (*Artifact, error) {
	cr := spec.ChartRepository
	base, err := repoURL(cr.URL)
	if err != nil {
		return nil, err
	}
	client, err := repoClient(base, creds, opts.Policy)
	if err != nil {
		return nil, err
	}
	chartURL, want, version, err := repoChart(ctx, client, base, cr, opts)
	if err != nil {
		return nil, err
	}
	helm := spec.Verify != nil && spec.Verify.Provider == ProviderHelm
	// A provenance file signs the archive, which the cache does not keep:
	// a chart to verify is always downloaded.
	if want != "" && opts.Cache != nil && !helm {
		if a, ok := opts.Cache.Get(want); ok {
			c := *a
			c.URL = chartURL.String()
			return &c, nil
		}
	}
	data, err := get(ctx, client, chartURL, opts.maxSize())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if want != "" && got != want {
		return nil, fail(ReasonDigestMismatch, nil, "%s: the chart archive's digest is %s, the index says %s", chartURL.Redacted(), got, want)
	}
	var provURL string
	var prov []byte
	if helm {
		// Verified before the archive is even unpacked.
		if provURL, prov, err = provenance(ctx, client, chartURL, data, creds.VerifyKeys); err != nil {
			return nil, err
		}
	}
	a, err := newArtifact(data, opts.maxSize())
	if err != nil {
		return nil, err
	}
	if a.Version != version {
		return nil, fail(ReasonInvalidChart, nil, "%s: Chart.yaml says version %s, the index %s", chartURL.Redacted(), a.Version, version)
	}
	if opts.Cache != nil {
		opts.Cache.Add(a)
	}
	c := *a
	c.URL = chartURL.String()
	c.ProvenanceURL, c.Provenance = provURL, prov
	return &c, nil
}

// repoChart is where the chart to pull is, the digest it must have (if
// known) and its version: those status.source pinned, else those of the
// index's newest entry that matches.
func repoChart(ctx context.Context, client *http.Client, base *url.URL, cr *v1alpha1.ChartRepositorySource, opts Options) (chartURL *url.URL, want, version string, err error) {
	if opts.Pin != nil && opts.Pin.URL != "" {
		if chartURL, err = chartLocation(base, opts.Pin.URL, opts.Policy.AllowRedirects); err != nil {
			return nil, "", "", err
		}
		return chartURL, opts.Pin.Digest, opts.Pin.Version, nil
	}
	entry, err := resolve(ctx, client, base, cr.Chart, cr.Version)
	if err != nil {
		return nil, "", "", err
	}
	if len(entry.URLs) == 0 {
		return nil, "", "", fail(ReasonInvalidChart, nil, "chart %s %s in %s has no URL", cr.Chart, entry.Version, cr.URL)
	}
	if chartURL, err = chartLocation(base, entry.URLs[0], opts.Policy.AllowRedirects); err != nil {
		return nil, "", "", err
	}
	if entry.Digest != "" {
		want = "sha256:" + strings.TrimPrefix(entry.Digest, "sha256:")
	}
	return chartURL, want, entry.Version, nil
}

// provenance pulls the provenance file beside chartURL and verifies the
// archive data with it; a missing provenance file is Unsigned.
func provenance(ctx context.Context, client *http.Client, chartURL *url.URL, data, keys []byte) (string, []byte, error) {
	p, _ := url.Parse(chartURL.String() + ".prov")
	prov, err := get(ctx, client, p, MaxProvenanceSize)
	var serr *Error
	if errors.As(err, &serr) && serr.Reason == ReasonNotFound {
		prov, err = nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	if err := verifyProvenance(data, chartURL.Path, prov, keys); err != nil {
		return "", nil, err
	}
	return p.String(), prov, nil
}

// repoURL parses a chart repository's URL: https, with a host, no query.
func repoURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fail(ReasonInvalidSource, nil, "spec.source.chartRepository.url: needs https://HOST[/PATH], with no query, fragment or user")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// chartLocation resolves an index entry's URL against the repository's:
// a relative URL is the repository's; an absolute one must be https and,
// unless otherHosts, on the repository's host, else it is refused.
func chartLocation(base *url.URL, raw string, otherHosts bool) (*url.URL, error) {
	ref, err := url.Parse(raw)
	if err != nil {
		return nil, fail(ReasonInvalidChart, nil, "the index's URL of the chart does not parse")
	}
	u := base.ResolveReference(ref)
	switch {
	case u.Scheme != base.Scheme || u.User != nil:
		return nil, fail(ReasonURLRefused, nil, "the index places the chart at %s://%s, not over https: a chart is pulled over https only", u.Scheme, u.Host)
	case u.Host != base.Host && !otherHosts:
		return nil, fail(ReasonURLRefused, nil, "the index places the chart on %s, not on %s: a chart is pulled only from the repository spec.source names, unless the cluster admin allows other hosts (--allow-source-redirects)", u.Host, base.Host)
	}
	return u, nil
}

// repoClient is an HTTP client for the repository at base under policy:
// https only, creds.CA trusted, no redirect to another scheme, nor to
// another host unless policy allows it, basic auth sent to base's host
// only.
func repoClient(base *url.URL, creds Credentials, policy Policy) (*http.Client, error) {
	t, err := creds.transport(policy)
	if err != nil {
		return nil, fail(ReasonPullFailed, nil, "%s", err.Error())
	}
	user, pass, err := creds.userPass(base.Host)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport: authed{next: t, host: base.Host, user: user, pass: pass},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			switch {
			case req.URL.Scheme != base.Scheme:
				return fail(ReasonURLRefused, nil, "redirected to %s://%s: a chart is pulled over https only", req.URL.Scheme, req.URL.Host)
			case req.URL.Host != base.Host && !policy.AllowRedirects:
				return fail(ReasonURLRefused, nil, "redirected to %s, not on %s: a chart is pulled only from the repository spec.source names, unless the cluster admin allows other hosts (--allow-source-redirects)", req.URL.Host, base.Host)
			case len(via) >= 5:
				return fail(ReasonPullFailed, nil, "more than 5 redirects")
			}
			return nil
		},
	}, nil
}

// get reads u with client, at most limit bytes.
func get(ctx context.Context, client *http.Client, u *url.URL, limit int64) ([]byte, error) {
	body, err := open(ctx, client, u, limit, "")
	if err != nil {
		return nil, err
	}
	// Read only: what the read got is checked; Close adds nothing.
	defer func() { _ = body.Close() }()
	data, err := io.ReadAll(body)
	if err != nil {
		var serr *Error
		if errors.As(err, &serr) {
			return nil, serr
		}
		return nil, remoteError(err, "get %s", u.Redacted())
	}
	return data, nil
}

// open gets u with client and returns its body, which fails with
// TooLarge once more than limit bytes are read (an answer that says it is
// longer fails at once); what names what is bounded in those errors, u
// when empty.
func open(ctx context.Context, client *http.Client, u *url.URL, limit int64, what string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fail(ReasonPullFailed, nil, "get %s: not a URL", u.Redacted())
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, remoteError(err, "get %s", u.Redacted())
	}
	if what == "" {
		what = u.Redacted()
	}
	// The status is told by its code: the reason phrase, like the body of
	// an error answer, is the server's text and is never repeated.
	var ferr error
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		ferr = fail(ReasonUnauthorized, nil, "get %s: %s", u.Redacted(), httpStatus(resp.StatusCode))
	case resp.StatusCode == http.StatusNotFound:
		ferr = fail(ReasonNotFound, nil, "get %s: %s", u.Redacted(), httpStatus(resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		ferr = fail(ReasonPullFailed, nil, "get %s: %s", u.Redacted(), httpStatus(resp.StatusCode))
	case resp.ContentLength > limit:
		ferr = fail(ReasonTooLarge, nil, "%s: %d bytes, over the bound of %s", what, resp.ContentLength, sizeOf(limit))
	}
	if ferr != nil {
		_ = resp.Body.Close()
		return nil, ferr
	}
	return &bounded{ReadCloser: resp.Body, left: limit, limit: limit, what: what}, nil
}

// bounded is a body that fails with TooLarge once more than limit bytes
// are read; left is what remains of limit.
type bounded struct {
	io.ReadCloser
	left, limit int64
	what        string
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fail(ReasonTooLarge, nil, "%s: over the bound of %s", b.what, sizeOf(b.limit))
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fail(ReasonTooLarge, nil, "%s: over the bound of %s", b.what, sizeOf(b.limit))
	}
	return n, err
}

// sizeOf says n bytes in MiB when it is a whole number of them.
func sizeOf(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// authed is a transport that sets basic auth on requests to one host.
type authed struct {
	next       http.RoundTripper
	host       string
	user, pass string
}

func (a authed) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == a.host && (a.user != "" || a.pass != "") {
		r = r.Clone(r.Context())
		r.SetBasicAuth(a.user, a.pass)
	}
	return a.next.RoundTrip(r)
}
