// Package applyset is the KEP-3659 ApplySet as stencil keeps it: its
// parent and metadata, and the writes to its members.
//
//   - applyset.go, parent.go: the parent (Parent: a Composition or an
//     Instance of a published kind), its id (ID, kubectl's formula), the
//     labels and annotations kubectl reads, and the Inventory the parent
//     records (group-kinds and namespaces where members may be); Recorded,
//     the inventory prune, deletion and .Release.IsUpgrade act on: the
//     controller's record (status.inventory), of which the annotations are
//     a copy for kubectl (Mirrors), never proof.
//   - ownership.go: Owns, the one ownership test every write over an
//     existing object and every delete or orphaning asks (apply, hooks,
//     prune, finalize), and every read of a member's state (status,
//     observed values, generated values): Ours (labelled part of the set
//     and recorded in its Record), Adoptable (of no set, or labelled but
//     not recorded, and consenting: the stencil.dev/adopt annotation
//     naming the parent, or a kind the Bundle's permissions.adopt lists),
//     Foreign (another set's) or NotOurs. Invariant: an object that is not
//     Ours or Adoptable is never overwritten, labelled or deleted
//     (Refusal: AdoptionRefusedError, ForeignMemberError name it, never
//     its content).
//   - record.go: Record, the controller's record of the set's members
//     (status.inventory.members: UIDs of what stencil created or applied,
//     and of the crds/ CRDs it created), the only proof of membership:
//     the part-of label and the field managers are anyone's to write who
//     may patch an object, and only find members. RecordOf reads it from
//     the parent's status; a parent an earlier stencil reconciled has a
//     legacy record, seeded once from a live listing (keep.go:
//     SeedRecord); KeepRecord writes it alone over the parent's latest
//     status when a pass's status write failed.
//   - apply.go: Applier, server-side apply under the one FieldManager,
//     stage by stage; each apply yields an ApplyResult (Created,
//     Configured, Reapplied, Unchanged, Failed) with the reason to stall
//     on when no retry can fix it. An object the cache does not hold is
//     created with a resourceVersion precondition that only a create
//     meets (no read first); an existing one is put to Owns and applied
//     over with forced ownership only when Ours or Adoptable.
//   - precondition.go: every apply and dry run carries the judgement it
//     follows: the uid and resourceVersion of the object Owns and the
//     no-change decision were made on (or the create-only version), so
//     an object replaced or changed between the read and the write is
//     never written; the API server's refusal (stale) reads the object
//     live and judges it again, a bounded number of times, and is
//     otherwise a transient failure, never a stall.
//   - the no-change decision is package nochange (Schemas, NewSchemas
//     here bind it to FieldManager): the desired object is applied locally
//     onto the cached live one (structured-merge-diff through
//     managedfields, typed by the kind's schema); no request is sent when
//     that leaves the object and its managed fields as they are. A case
//     the server may default is settled once by a server-side dry run and
//     remembered.
//   - owners.go: the owner references a planned member carries (package
//     plan adds the parent's), their controller bit settled against the
//     live object (settleOwners: the one a live object holds is kept, a
//     new one is no controller where another is), and Applier.Pace, the
//     wait before a write whose only change is a reference the member
//     lacks (package ownership's Pacer).
//   - changes.go: the changed fields of an apply, as paths (never a
//     Secret's value); secrets.go: the one Secret masker (MaskSecretData,
//     which `stencil diff` shares); scrub.go: API errors without the
//     values they quote.
//   - prune.go: Pruner lists members by the part-of label over the
//     recorded inventory and deletes them with a UID precondition
//     (Prunable, Owned: only what Owns finds Ours, recorded, and is not annotated
//     stencil.dev/prune: disabled). budget.go: Budget, what one pass may
//     prune (a share of the set, no protected kinds unless allowed: package prune).
//   - ApplyResult.Drift: the other field managers whose changes of a
//     member an apply undoes, from its managedFields (nochange's
//     authors.go), for the DriftRepaired event.
//   - preview.go: DryRun (what applying objects would do, by a server-side
//     dry run) and PruneCandidates (what prune would then take out).
//   - flapping.go: FlapDetector, the recent writes of each parent's
//     members, to find one that another writer keeps changing back.
//
// The gate that decides whether to prune at all belongs to the pass
// (package reconcile).
package applyset
