// Package recall holds what the Composition controller remembers between
// passes, in this process only:
//
//   - Memo: one value per parent under a key (the last successful pass,
//     a render known to fail, a terminal stall, the parent's version
//     stencil last wrote); a value is found only under the key it was put
//     with, so a change of the inputs the key names forgets it.
//   - Pass: what the last successful pass of a parent saw (its render's
//     inputs, the planned members, every live member as the cache held
//     it, and the observed values its render used), so that a later
//     pass finding the same only recomputes status;
//     Fingerprint says when a member changed only in its status.
//   - Observed: the observed values a parent's last render used (the
//     members' fields templates read with observed), what it held back,
//     and how many passes in a row those values changed under it.
//   - Bundles: the parsed Bundles, with their compiled outputs, at most
//     MaxBundles, each parsed once per generation (and per pulled chart
//     digest for a Bundle with a source), and the revisions parents are
//     on (package revision), each under its own name, parsed once.
//
// Invariants: nothing here is read from or written to the API server;
// losing any of it (a restart) costs a full pass, never a wrong one.
package recall
