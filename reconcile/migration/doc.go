// Package migration migrates the storage of the kinds Bundles publish:
// when the storage version of a published kind's CRD (the one package
// published keeps, labelled publish.LabelBundle=<Bundle>) is not the only
// entry of its status.storedVersions, every stored instance is rewritten
// in the storage version, and status.storedVersions is then trimmed to
// it, so that the versions before can leave the Bundle (see
// publish.CheckVersionRemoval, which refuses that until then). The
// Bundle's status.storage reports it (v1alpha1.StorageStatus).
//
// # Workflow
//
// One pass of the Migrator (a controller of Bundles, woken by a change of
// a Bundle's generation or of its kind's CRD):
//
//  1. The CRD must be Established and the Bundle's; its storage version
//     is the one marked storage.
//  2. status.storedVersions is [storage version]: nothing to migrate.
//     The instances' metadata is listed to count writtenIn (below), and
//     status.storage says Migrated.
//  3. Otherwise the migration waits until the API server's discovery
//     reports the storage version's storageVersionHash for the kind: from
//     then on, what the API server writes is stored in it.
//  4. The instances are listed in pages (Options.PageSize) in the
//     storage version (as unstructured objects: the whole object is
//     written back), and each is written back as read: an Update with
//     its resourceVersion, at most Options.WritesPerSecond (a token
//     bucket shared by every Bundle). The API server stores it in the
//     storage version; one already stored there is not written to etcd
//     at all. A Conflict means someone wrote it since (and so stored it
//     in the storage version); NotFound that it is gone: either counts
//     as done.
//  5. After each page, status.storage records the instances migrated and
//     the last key done (namespace/name): a restart lists from the start
//     again and skips, unwritten, every item up to it (the API server
//     lists in key order, the order of namespace/name as strings).
//  6. Once every page is done, the CRD is read again and, if its storage
//     version and generation are still the migration's, its
//     status.storedVersions is set to [storage version] (its status
//     subresource, on the condition that the CRD has not changed since
//     read). status.storage says Migrated, with its completion time, and
//     a StorageMigrated event is recorded on the Bundle.
//
// # Written in
//
// Each listing counts status.storage.writtenIn: per version, the
// instances whose newest managedFields entry (of the main resource, by
// another manager than stencil's own) was written in it: the version
// their writers (a GitOps repository's YAML, say) use. When the Bundle no
// longer lists a version, or no longer serves it, while instances were
// last written in it, the Bundle gets a VersionStillWritten Warning event
// and status.storage.message says so: their writers break on their next
// write.
//
// # Identity
//
// Every read and write here is the controller's own: the CRD and the
// instances are the Bundle's kind, not a tenant's members, and a no-op
// write changes nothing a tenant wrote. Stencil's admission policy does
// not check a write that changes no spec, label or annotation, so the
// rewrite does not need the instance's ServiceAccount. The controller's
// RBAC covers it: update on the published kinds (the ClusterRole `stencil
// bundle rbac` prints, which the Bundle controller checks before serving
// the kind) and update on customresourcedefinitions/status.
//
// # Invariants
//
//   - Only the leader migrates (the controller is leader-elected), and one
//     Bundle at a time per kind: a kind's CRD is labelled for one Bundle,
//     and a Bundle is reconciled by one worker at a time.
//   - An instance is written only as it was read: its spec, and so its
//     generation, are unchanged, and the Composition pass that its new
//     resourceVersion wakes renders the same objects and writes no
//     child.
//   - status.storedVersions is trimmed only after a complete pass of the
//     storage version that the CRD still has, at the CRD generation the
//     migration began at (a CRD changed since, whose storage version may
//     have moved away and back, starts the migration over), and only
//     after discovery reported that version as the kind's storage.
//   - A pass that fails leaves status.storage as far as it got; the next
//     pass (the controller's backoff, or a minute after a Forbidden)
//     resumes there. A pass stopped mid-page writes that page's instances
//     again after the restart: harmless, as each write is a no-op.
//
// With several API servers, each adopts a CRD's new storage version when
// its own watch of the CRD catches up; discovery is read from one of
// them. As Kubernetes' own storage version migrator, this trusts that
// they have all caught up by the time a pass lists the instances.
package migration
