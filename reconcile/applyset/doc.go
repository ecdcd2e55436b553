// Package applyset is the KEP-3659 ApplySet as stencil keeps it: its
// parent and metadata, and the writes to its members.
//
//   - applyset.go, parent.go: the parent (Parent: a Composition or an
//     Instance of a published kind), its id (ID, kubectl's formula), the
//     labels and annotations kubectl reads, and the Inventory the parent
//     records (group-kinds and namespaces where members may be).
//   - apply.go: Applier, server-side apply under the one FieldManager with
//     forced ownership, stage by stage; each apply yields an ApplyResult
//     (Created, Configured, Reapplied, Unchanged, Failed) with the reason
//     to stall on when no retry can fix it. An object of another ApplySet
//     is never taken over (ForeignMemberError).
//   - uptodate.go, schemas.go, nochange.go: the no-change decision. The
//     desired object is applied locally onto the cached live one
//     (structured-merge-diff through managedfields, typed by the kind's
//     schema); no request is sent when that leaves the object and its
//     managed fields as they are. A case the server may default is settled
//     once by a server-side dry run and remembered.
//   - changes.go: the changed fields of an apply, as paths (never a
//     Secret's value); secrets.go: the one Secret masker (MaskSecretData,
//     which `stencil diff` shares); scrub.go: API errors without the
//     values they quote.
//   - prune.go: Pruner lists members by the part-of label over the
//     recorded inventory and deletes them with a UID precondition
//     (Prunable, Owned: only what stencil's field manager manages and is
//     not annotated stencil.dev/prune: disabled).
//   - preview.go: DryRun (what applying objects would do, by a server-side
//     dry run) and PruneCandidates (what prune would then take out).
//   - flapping.go: FlapDetector, the recent writes of each parent's
//     members, to find one that another writer keeps changing back.
//
// The gate that decides whether to prune at all belongs to the pass
// (package reconcile).
package applyset
