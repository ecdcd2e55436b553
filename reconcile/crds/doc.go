// Package crds installs the CustomResourceDefinitions of a chart's crds/
// folders (reconcile/plan's Plan.CRDs) as Helm installs them: before
// anything else of a pass, created when absent, never deleted with the
// set, and updated only under the Bundle's spec.crds CreateReplace.
//
// Whose identity: every create and update is made as the parent's writer
// (its ServiceAccount, which must be allowed to create
// customresourcedefinitions: a refusal is a Forbidden the pass stalls
// with); whether a CRD exists, what it holds and whether it is
// Established are read as the controller, as the API server's discovery
// shows any user the kinds it serves.
//
// Invariants: a converged set writes nothing here: a CRD that exists is
// left under Create, and under CreateReplace written only when a field
// the chart sets differs from the live one, and only when the set
// created it: its UID is in the set's record (applyset.Record,
// status.inventory.members.crds), or it consents with stencil.dev/adopt.
// A same-named CRD the set did not create (an admin's, another set's,
// the CRD of one of stencil's published kinds) is never written, only
// reported (Outcome.NotOwned). No CRD is ever labelled a member of the
// set, so prune and finalize never see one.
package crds
