// Package source pulls the charts Bundles name in spec.source: a Helm
// chart stored as an OCI artifact (oci://HOST/PATH/CHART:TAG or
// @sha256:HEX, Helm's media types) or a chart in a Helm chart repository
// (an index.yaml over HTTPS), and unpacks it into the files a Bundle's
// spec.files would hold.
//
// Responsibilities:
//   - Resolve: a tag or a version range (Masterminds semver, as Helm and
//     Flux read one) to one version and one digest.
//   - Pull: with go-containerregistry's remote package for OCI, net/http
//     for chart repositories, with the credentials and CA of Credentials,
//     where the cluster admin's Policy lets it go.
//   - Verify: the manifest's digest when the reference pins one, the chart
//     layer's digest from the manifest, a chart repository index entry's
//     digest when it has one; a mismatch is a DigestMismatch. With
//     spec.source.verify, the chart's signature too (package verify:
//     cosign for an OCI chart, the Helm provenance file for a chart
//     repository's; the other pairings are InvalidSource), with the keys
//     of Credentials.VerifyKeys: Unsigned, SignatureInvalid, InvalidKey.
//   - Bound: a chart repository's index is read as a stream of at most
//     MaxIndexSize, and only the named chart's entries are parsed, one at
//     a time, each at most MaxIndexEntrySize (index.go, index_yaml.go):
//     a resolve holds one entry, whatever the index's size. A chart
//     archive over MaxArchiveSize (compressed) is TooLarge
//     before it is read; unpacking goes through chart.ExpandArchives, the
//     unpacking `stencil bundle pack` uses for charts/*.tgz, with its
//     bounds (chart.MaxArchiveBytes, chart.MaxArchiveFiles) and its
//     confinement (regular files only, every path inside the chart's one
//     folder: no link, no "..").
//   - Cache: Cache keeps unpacked charts by digest, bounded in bytes.
//
// Invariants:
//   - Requests go only to the URL the Bundle names: the OCI reference's
//     registry (and the token server that registry names, and the
//     storage its blob requests are redirected to, as the OCI
//     distribution protocol has it; a blob is verified by digest), or the
//     chart repository's own scheme and host. An index entry's URL on
//     another host, and any other redirect to another host, is refused
//     (URLRefused) unless Policy.AllowRedirects. Only https is used.
//   - No connection is made to a loopback, private, link-local (the
//     clouds' metadata service), unspecified, multicast or otherwise
//     special address (RefusedAddress) outside Policy.AllowedNetworks:
//     the check runs when the connection is made, on the address dialled,
//     so a name that resolves to such an address (at any lookup) is
//     refused too (URLRefused). Policy is the cluster admin's; the zero
//     Policy refuses all of them.
//   - Credentials go only to the hosts they are for (Credentials.Hosts
//     from a Secret's key hosts, a .dockerconfigjson's entries): a pull
//     from another host is refused before any request, and a request
//     that would carry them elsewhere (a registry's token server on
//     another host) is refused unsent (SecretRefused). A redirect never
//     carries them.
//   - No message quotes what a server sent: a failed request is its
//     status code and the distribution spec's error codes, or the kind
//     of network or TLS failure (see remoteError).
//   - With spec.source.verify, no chart is returned or cached before its
//     signature verified, on every path: a resolve, a cache hit (cosign
//     checks the manifest's signature before the cache is looked up; a
//     chart to check with helm is always downloaded, as the cache keeps
//     no archive) and a pull pinned by status.source.
//   - Every failure is an *Error with a Reason for a Bundle's condition;
//     nothing here panics on what a registry sends.
//   - No message quotes a credential.
//
// Example:
//
//	art, err := source.Fetch(ctx, *bundle.Spec.Source, creds, source.Options{Cache: cache})
//	var serr *source.Error
//	if errors.As(err, &serr) {
//		// serr.Reason is PullFailed, Unauthorized, NotFound, ...
//	}
//	spec.Files = art.Files
package source
