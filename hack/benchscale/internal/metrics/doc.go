// Package metrics reads the controller's /metrics (and, with Get, the
// API server's): the Prometheus text format controller-runtime serves,
// parsed into a Set of samples the harness sums by name and labels
// (reconciles finished, the work queue's depth, passes by outcome,
// conversion webhook calls) and, for a cluster without an audit log, the
// controller's own count of its API requests (stencil_api_requests_total).
package metrics
