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
//     rendered.
//   - A recorded verification is tied to the keys it was made with
//     (status.source.keysFingerprint, the sha256 of the verify Secret's
//     key) and to the Bundle's generation (verifiedGeneration): a parent
//     renders the recorded chart only while both match (Verified), else it
//     waits for the Bundle controller to verify it again (Reverify, also
//     run when the keys Secret changes). A chart that fails that check is
//     recorded as unverified and dropped from the cache: its parents
//     stall (*UnverifiedError, reason SourceUnverified) and nothing is
//     rendered from it again. A re-resolve refused while the recorded
//     verification holds (a new tag that is unsigned) keeps the recorded
//     chart, and SourceReady says the new one was refused.
package pull
