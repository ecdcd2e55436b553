// Package latency times how soon a change of a child shows on its parent,
// through the harness's watch (package watch), so each time is what a
// client watching the API server sees:
//
//   - Status: a Composition of a Deployment is given a new image,
//     -samples times; each sample is the time from the Deployment seen
//     Current (kstatus) with that image to the Composition seen Ready for
//     the generation that set it.
//   - Outputs: a member's field the template leaves to other writers is
//     changed, -samples times; each sample is the time from the change's
//     answer to the parent's status.outputs seen with it, and the
//     controller's requests and CPU over the samples are counted (each is
//     one pass that changes only an output).
//
// Each deletes its Composition at the end and waits until it is gone, so
// the phases after it do not share the cluster with it.
package latency
