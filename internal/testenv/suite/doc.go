// Package suite is what a package of stencil's controller tests shares:
// Run, in its TestMain, starts the real control plane (package testenv)
// and one controller running as its own ServiceAccount with config/rbac's
// permissions (identity.go), and a Suite's helpers serve its tests: waits
// for a Composition's conditions (wait.go), the objects (objects.go),
// Bundles (bundles.go), published kinds (gadgets.go), users and grants
// (access.go), webhooks (admission.go) and members' writes (members.go)
// the tests make.
//
// Invariants:
//   - Every wait waits for the state it is asked for (a condition at the
//     object's generation, with one of the reasons the code allows),
//     never for the first state it sees, and never decides by a timing.
//   - Each test works in its own namespace; a Restart gives the package
//     a controller with no memory of earlier passes.
package suite
