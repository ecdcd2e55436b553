// Package pull gives the controller the charts its Bundles name in
// spec.source (see package source): Puller resolves a source for the
// Bundle controller, and gives every other reader (a Composition's pass,
// the admission webhook) a copy of the Bundle whose spec.files are the
// chart of the digest status.source records.
//
// Invariants:
//   - A parent renders only the digest status.source records: a resolve
//     that finds another version changes the Bundle's status first, which
//     brings a pass of its parents; a resolve that fails leaves the
//     recorded digest in place, so parents keep rendering it.
//   - Pulls are made as the controller, with credentials read from
//     Secrets in the controller's own namespace (Puller.Namespace) only,
//     and only those labelled stencil.dev/secret-type=bundle-source,
//     and go only where package source allows (the URL in the Bundle,
//     the addresses and redirects of the admin's source.Policy).
//   - Charts are kept in one source.Cache by digest; losing it (a
//     restart) costs a pull of the recorded digest, never another chart.
//   - With spec.source.verify, a digest is recorded only after a resolve
//     whose signature verified (source.Fetch verifies before it returns
//     or caches), and a pull of the recorded digest after the cache is
//     lost verifies again: a chart whose signature is refused is never
//     rendered. A re-resolve refused (Unsigned, SignatureInvalid,
//     InvalidKey) is a failed resolve like any other: the recorded chart
//     stays and SourceReady says the new one was refused.
package pull
