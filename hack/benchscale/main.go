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
// With -rollout it runs the rollout benchmark instead (see rollout.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// options are the harness's flags.
type options struct {
	n, children                   int
	concurrency, applyConcurrency int
	qps                           float64
	burst                         int
	kubeconfig, stencil           string
	controllerKubeconfig          string
	auditLog, auditUser           string
	unrelatedConfigMaps           int
	unrelatedSecrets              int
	samples                       int
	keep                          bool
	heapProfile                   string
	cpuProfile                    string
	apiServerProfile              string
	// webhook serves the controller's admission webhooks on the local
	// cluster (config/webhook, pointed at the controller on loopback).
	webhook bool
	// rollout runs the rollout benchmark (rollout.go) instead of the
	// others, over rolloutNamespaces namespaces, each wave soaking
	// rolloutSoak; the failing revision's waves fail past rolloutDeadline.
	rollout                      bool
	rolloutNamespaces            int
	rolloutSoak, rolloutDeadline time.Duration
}

func main() {
	var o options
	// A flag set of its own: controller-runtime registers -kubeconfig on
	// the default one.
	flag := flag.NewFlagSet("benchscale", flag.ExitOnError)
	// The defaults of -concurrency, -apply-concurrency, -qps and -burst are
	// the controller's (internal/cli/controller/controller.go).
	flag.IntVar(&o.n, "n", 1000, "Compositions")
	flag.IntVar(&o.children, "children", 5, "members each Composition renders (ConfigMap, Secret, Service, ServiceAccount, Role, in turn)")
	flag.IntVar(&o.concurrency, "concurrency", 4, "the controller's --concurrency, and the floor's sets applied at once")
	flag.IntVar(&o.applyConcurrency, "apply-concurrency", 8, "the controller's --apply-concurrency, and the floor's objects of a set applied at once")
	flag.Float64Var(&o.qps, "qps", -1, "the controller's --kube-api-qps, and the floor client's (negative: no client-side limit)")
	flag.IntVar(&o.burst, "burst", 0, "the controller's --kube-api-burst, and the floor client's")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "use this cluster instead of starting the local one")
	flag.StringVar(&o.controllerKubeconfig, "controller-kubeconfig", "", "with -kubeconfig: the controller's, for a user of its own that -audit-user names (default: -kubeconfig)")
	flag.StringVar(&o.stencil, "stencil", "bin/stencil", "the stencil binary to run the controller from")
	flag.StringVar(&o.auditLog, "audit-log", "", "with -kubeconfig: the API server's JSON audit log, to count requests on the server side")
	flag.StringVar(&o.auditUser, "audit-user", "", "with -audit-log: the user the controller authenticates as")
	flag.IntVar(&o.unrelatedConfigMaps, "unrelated-configmaps", 20000, "ConfigMaps stencil must not cache, created before memory is read again")
	flag.IntVar(&o.unrelatedSecrets, "unrelated-secrets", 5000, "Secrets stencil must not cache, created before memory is read again")
	flag.IntVar(&o.samples, "samples", 20, "Deployment rollouts timed for the status latency")
	flag.BoolVar(&o.keep, "keep", false, "leave the local cluster running at the end")
	flag.BoolVar(&o.webhook, "webhook", true, "on the local cluster: the controller serves its admission webhooks (config/webhook on loopback), as a deployed controller does; false: --webhook-port=0")
	flag.StringVar(&o.heapProfile, "heap-profile", "", "write the controller's heap profile (go tool pprof) with the N×children members to this file")
	flag.StringVar(&o.apiServerProfile, "apiserver-cpu-profile", "", "write kube-apiserver's CPU profile (go tool pprof) over the cold converge to this file, over the floor to FILE.floor, over the floor with parents to FILE.parents (its /debug/pprof, read as the admin)")
	flag.StringVar(&o.cpuProfile, "cpu-profile", "", "write the controller's CPU profile (go tool pprof) over the cold converge to this file, and over the floor with parents (its admission webhooks) to FILE.parents (render workers are other processes and not in it)")
	flag.BoolVar(&o.rollout, "rollout", false, "run the rollout benchmark instead (make bench-rollout): one Bundle change rolled to -n parents all at once, in waves of 1, 10, 100 and the rest, and a failing revision")
	flag.IntVar(&o.rolloutNamespaces, "rollout-namespaces", 100, "with -rollout: the namespaces the parents are spread over")
	flag.DurationVar(&o.rolloutSoak, "rollout-soak", 10*time.Second, "with -rollout: each wave's soak")
	flag.DurationVar(&o.rolloutDeadline, "rollout-deadline", time.Minute, "with -rollout: the failing revision's progress deadline")
	_ = flag.Parse(os.Args[1:])
	if o.n < 1 || o.children < 1 || o.samples < 1 {
		fmt.Fprintln(os.Stderr, "benchscale: -n, -children and -samples must be at least 1")
		os.Exit(2)
	}
	if (o.auditLog == "") != (o.auditUser == "") {
		fmt.Fprintln(os.Stderr, "benchscale: -audit-log and -audit-user go together")
		os.Exit(2)
	}
	// The harness's own informers log through controller-runtime; their
	// chatter is not the benchmark's.
	log.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if res != nil {
		res.print(os.Stdout, o, runtime.NumCPU())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}
