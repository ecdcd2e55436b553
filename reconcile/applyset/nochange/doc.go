// Package nochange decides, without a request, whether a server-side
// apply would change anything: the "no change, no write" decision of
// stencil's Applier (package applyset).
//
// It owns:
//
//   - schemas.go: Schemas, the types of the kinds applied: built-in kinds
//     from client-go's compiled schemas (offline), custom kinds from the
//     cluster's OpenAPI v3 document of their group-version, fetched once
//     and fetched again when the cluster's index shows its hash changed,
//     when a kind is missing from it, or when stencil applied a CRD of the
//     group (ForgetGroup).
//   - uptodate.go: the local apply. The desired object is applied onto the
//     cached live one through the field manager the API server runs
//     (structured-merge-diff through managedfields, typed by the kind's
//     schema), the result normalised as the server stores it, and
//     compared with live, value for value and managed field for managed
//     field; each "no write" is remembered by object UID until live's
//     resourceVersion or the desired object changes, and so is each
//     object the API server stored for stencil's apply (Applied).
//   - authors.go: the other field managers whose fields the apply sets
//     back (Decision.Authors): the modified fields they own in live and
//     stencil does not, as managedFields record them.
//   - nochange.go: Decide and its Decision, and the confirmer: a case the
//     server may default (live holds all the result holds, and more, with
//     every field set unchanged) is settled once by a server-side dry run
//     of exactly the object judged (its uid and resourceVersion as
//     preconditions: a stale copy is refused, and so written) and the
//     verdict remembered.
//
// Invariants: when Decide says no write (Decision.Write false), the API
// server would store the object and its managed fields unchanged: the
// local apply found so, or live is, at the same resourceVersion, what the
// server stored for stencil's apply of the same desired object (a
// server-side apply repeated onto its own result changes nothing); when it
// is unsure (no schema for the kind, a conversion or typing error, a dry
// run that fails) it says write: a wrong skip leaves drift, a needless
// write costs one request. A Decision names changed fields as paths, never
// their values, and its errors never quote a value of the object.
package nochange
