// Package controller is `stencil controller`: its flags and the wiring of
// the process that runs the Composition controller (package reconcile),
// the Bundle controller and published kinds (package published) and the
// admission webhook (package admission) on one controller-runtime
// manager.
//
// It owns the process's settings: the API client's rate limits (none on
// the client by default: the API server's API Priority and Fairness
// bounds stencil), request counting, the metrics endpoint (MetricsServer:
// HTTPS behind a TokenReview and SubjectAccessReview by default), probes,
// leader election by shard, the garbage collection target (gc.go), and
// the render pools: one for reconciles and a small bounded one for
// admission reviews, both under the --render-* limits (package
// internal/cli/flags) and strict isolation unless told otherwise.
//
// Invariants: a parent that names no ServiceAccount is written as
// --default-service-account (never the namespace's "default") unless
// --write-as-controller says otherwise, and the two are exclusive; an
// empty --shard or --default-service-account is refused, not read as
// "none".
package controller
