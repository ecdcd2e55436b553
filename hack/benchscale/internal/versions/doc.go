// Package versions is the versions benchmark (-versions, make
// bench-versions): a published kind whose API evolves, measured and
// shown end to end on the local cluster. The kind is examples/versions'
// AppService, its conversions and values migrations read from the
// example (stencil.yaml, values.schema.json), its templates a Service as
// the example's and a ConfigMap in place of its Deployment (no pods for N
// instances); the first revision reads v1's spec, the next ones v2's,
// and all render the same objects. In order:
//
//  1. AppService v1 published in the single-version form; -n instances
//     applied in v1 (server-side apply, field manager bench-versions)
//     across 10 namespaces, until every one is Ready; the children's
//     resourceVersions recorded.
//  2. The Bundle changed to the example's: v1 deprecated and served, v2
//     stored and rendered. Timed: until v2 answers a LIST, until every
//     instance is Ready on the new revision, and meanwhile the storage
//     migration: from the CRD seen storing v2 to the Bundle's
//     status.storage Migrated and the CRD's status.storedVersions [v2];
//     the controller's requests over it, the migration's own apart.
//     Then, once the controller has nothing left to do: its writes to
//     children since the Bundle's change (0), the children's
//     resourceVersions and the instances' generations moved (0).
//  3. The v1 YAML of every instance applied again, as a GitOps tool
//     still holding it would: read in v1, each is as written; applied,
//     none changes (resourceVersion, generation), each is warned of the
//     deprecation, no child is written.
//  4. -samples LISTs of every instance in v1 (served, not stored) and in
//     v2 (stored), interleaved, as kubectl get lists (a Table, pages of
//     500), through a client of its own: p50, p99, and the API server's
//     conversion webhook calls over them. The API server converts an
//     instance into each served version's watch cache as it changes, so
//     a LIST it serves from that cache calls no webhook; what a LIST it
//     reads from etcd in v1 would add is measured apart: -samples
//     conversions of every instance to v1 by the webhook, in
//     ConversionReviews of 500, sent where the CRD sends them (with its
//     token, which the admin may read).
//  5. v1 removed from the Bundle: the CRD serves v2 alone, a GET in v1
//     is NotFound, every instance is Ready on the new revision, no child
//     was written since step 1.
//  6. A Composition of a plain Bundle, written for its first values (the
//     example's Composition), kept rendering when the next revision's
//     schema refuses them: Ready on it, status.valuesMigrations naming
//     the example's migrations, its children unchanged.
//
// Requests are the controller's, counted in the API server's audit log,
// and the conversion webhook is the controller's webhook server on
// loopback (-webhook): Run refuses a cluster without either. What it
// measured and checked is res.Versions (table.Versions); Run returns an
// error naming every check that failed.
package versions
