// Command benchscale measures stencil's controller at scale against a real
// control plane and prints a table; it asserts nothing. `make bench-scale`
// runs it (N=, CHILDREN=, CONCURRENCY=, QPS=, BURST= pass through).
//
// Without -kubeconfig it starts hack/local-cluster.sh's cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler, kwok) in
// .local/bench-cluster with the API server's audit log on, and runs the
// controller as a user of its own (a client certificate signed by the
// cluster's CA), so its requests are counted on the server side. With
// -kubeconfig, requests are counted from the controller's own
// stencil_api_requests_total unless -audit-log and -audit-user are given.
//
// In one run, in this order:
//
//  1. Floor: the objects N Compositions render (plan.NewPlan, as
//     `stencil render` prints them, without the part-of label so they stay
//     out of the controller's cache) applied by a bare server-side apply
//     client with the controller's concurrency and client rate limits,
//     then deleted. Each measured phase starts once the control plane is
//     idle.
//  2. Floor with parents: the same bare client, and for each set the
//     writes of a Composition no controller can do without: its creation
//     (through the admission webhooks) before the objects, one status
//     write after them; a shard no controller serves. Then deleted.
//  3. Cold converge: N Compositions created at once (concurrent creates)
//     until every one is Ready=True for its generation, seen through a
//     watch; the controller's requests per Composition.
//  4. A no-op pass: the Bundle is annotated, which changes no generation;
//     the controller maps every Bundle event to the Compositions that
//     render it, so each has one pass that should change nothing.
//  5. Memory: the controller's VmHWM and VmRSS with the N×children members.
//  6. Status latency: a Composition of a Deployment is given a new image,
//     -samples times; each sample is the time from the Deployment seen
//     Current (kstatus) with that image to the Composition seen Ready for
//     its generation, both seen through the harness's watches.
//  7. Unrelated objects: ConfigMaps and Secrets without stencil's labels
//     are created, another no-op pass is forced, memory is read again.
//  8. Restart: the controller is stopped and started; the time until it
//     has reported every Composition Ready again (its stencil_compositions
//     gauge) and its requests until it is idle.
//
// With -rollout it runs the rollout benchmark instead (package
// internal/rollout); with -versions the versions benchmark, a published
// kind given a second version (package internal/versions), which also
// checks what it demonstrates and exits 1 when a check fails.
//
// The parts live in packages under internal/, one noun each: options (the
// flags), cluster (the local cluster and its CPU time), controller (the
// controller's process), harness (what the phases share), floor (the bare
// server-side apply client), scale (the run above and the controller's
// phases), latency, rollout, versions, watch, requests, metrics, procfs,
// profile, fixture (the Bundles and names), table (the results and what
// is printed).
package main
