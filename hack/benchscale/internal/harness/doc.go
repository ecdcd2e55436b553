// Package harness is what every phase of a benchscale run shares: the
// cluster (the local one Open starts, or -kubeconfig's), the admin's
// client, the controller's flags, how its requests are counted (the audit
// log's user, or its own metric), the control plane's CPU, and the watch
// of the run's Compositions. Open installs what every phase needs (the
// CRDs, the webhook configurations, the run's namespaces and Bundles) and
// returns a Harness; the phases (packages floor, latency, scale and
// rollout) take it.
//
// A measured stretch of the controller's requests is a Window: Begin
// opens it, End counts what the controller sent since, on the server side
// when there is an audit log.
package harness
