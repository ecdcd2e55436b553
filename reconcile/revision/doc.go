// Package revision keeps the contents of a Bundle as BundleRevisions:
// what a revision is named, what it holds, how a parent renders it, and
// which revisions are kept. It is pure: it builds and reads objects, the
// rollout controller (package rollout) writes them.
//
//   - revision.go: Name (<bundle>-<10 hex digits of the content hash>),
//     New (a BundleRevision of a Bundle's current content), Template
//     (what a revision keeps of a Bundle's spec: what parents render,
//     never how the Bundle is used), Bundle (the Bundle a parent renders
//     when it is on a revision), Check (a revision holds the content its
//     hash names).
//   - keep.go: Prune, which revisions to delete: those past the history
//     limit that no parent is on or pinned to and no rollout needs, and
//     withdrawn ones nobody uses; PinningAllowed and HoldingAllowed.
//   - within.go: Within, a revision rendering within its Bundle's current
//     policy (Permissions: what both allow; CRDs: the narrower crds
//     policy), Narrows, and RenderKey (the revision and the policy it
//     renders within, for the render memos).
//
// Storage: a Bundle with files fits in etcd's object limit (1.5 MiB, the
// Bundle itself is stored there), and so does a revision, which holds the
// same files and a little metadata; a Bundle with a source (a chart pulled
// from a registry, up to 20 MiB) keeps only what was pulled (URL, version,
// digest and the signature check it passed): its chart is pulled again by
// digest, and verified again, when the controller's cache lacks it.
//
// Invariants: a revision never renders with more than its Bundle allows
// now (the author's narrowing binds every revision); a revision's content
// never changes (its spec is immutable
// in the CRD, and Check refuses one whose files do not hash to its
// revision, so an edited revision is never rendered); a revision of a
// signed chart renders only while the Bundle's keys are those it was
// verified with.
package revision
