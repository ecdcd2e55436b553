// Package floor measures what the writes cost without stencil's
// controller: the floor every controller is compared with.
//
//   - Measure: the objects N Compositions render (plan.NewPlan,
//     as `stencil render` prints them, without the part-of label so they
//     stay out of the controller's cache), applied by a bare server-side
//     apply client with the controller's concurrency and client
//     rate limits, then deleted.
//   - MeasureParents: the same client, and for each set the writes of a
//     Composition no controller can do without: its creation (through the
//     admission webhooks) before the objects, one status write after
//     them; a shard no controller serves. Then deleted.
//   - MeasureCosts: what the API server and etcd spend on one write of
//     each kind a parent takes (its status with and without the members
//     list, its ApplySet metadata) and on a ConfigMap of the same size.
//
// Each measured phase starts once the control plane is idle, and deletes
// what it made, waiting until the Service IPs it took are released, so the
// phases after it start from the cluster it started from.
package floor
