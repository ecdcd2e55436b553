package options

import (
	"errors"
	"flag"
	"time"
)

// Options are the harness's flags.
type Options struct {
	// N Compositions, each rendering Children members.
	N, Children int
	// Concurrency and ApplyConcurrency are the controller's
	// --concurrency and --apply-concurrency, and the floor's.
	Concurrency, ApplyConcurrency int
	// QPS and Burst are the controller's client rate limits, and the
	// floor client's (a negative QPS: none).
	QPS   float64
	Burst int
	// Kubeconfig, when set, is an existing cluster to use instead of the
	// local one; ControllerKubeconfig the controller's on it.
	Kubeconfig, ControllerKubeconfig string
	// Stencil is the binary the controller runs from.
	Stencil string
	// AuditLog and AuditUser count the controller's requests on an
	// existing cluster's server side.
	AuditLog, AuditUser string
	// UnrelatedConfigMaps and UnrelatedSecrets are created before memory
	// is read again.
	UnrelatedConfigMaps, UnrelatedSecrets int
	// Samples are the latency samples.
	Samples int
	// Keep leaves the local cluster running at the end.
	Keep bool
	// HeapProfile, CPUProfile and APIServerProfile are the files the
	// profiles asked for go to.
	HeapProfile, CPUProfile, APIServerProfile string
	// Webhook serves the controller's admission webhooks on the local
	// cluster (config/webhook, pointed at the controller on loopback).
	Webhook bool
	// Rollout runs the rollout benchmark instead of the others, over
	// RolloutNamespaces namespaces, each wave soaking RolloutSoak; the
	// failing revision's waves fail past RolloutDeadline.
	Rollout                      bool
	RolloutNamespaces            int
	RolloutSoak, RolloutDeadline time.Duration
	// Versions runs the versions benchmark instead of the others: a
	// published kind given a second version, its storage migrated, its
	// first version removed.
	Versions bool
}

// Register defines the flags on fs, each setting a field of o.
func (o *Options) Register(fs *flag.FlagSet) {
	// The defaults of -concurrency, -apply-concurrency, -qps and -burst are
	// the controller's (internal/cli/controller/controller.go).
	fs.IntVar(&o.N, "n", 1000, "Compositions")
	fs.IntVar(&o.Children, "children", 5, "members each Composition renders (ConfigMap, Secret, Service, ServiceAccount, Role, in turn)")
	fs.IntVar(&o.Concurrency, "concurrency", 4, "the controller's --concurrency, and the floor's sets applied at once")
	fs.IntVar(&o.ApplyConcurrency, "apply-concurrency", 8, "the controller's --apply-concurrency, and the floor's objects of a set applied at once")
	fs.Float64Var(&o.QPS, "qps", -1, "the controller's --kube-api-qps, and the floor client's (negative: no client-side limit)")
	fs.IntVar(&o.Burst, "burst", 0, "the controller's --kube-api-burst, and the floor client's")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "use this cluster instead of starting the local one")
	fs.StringVar(&o.ControllerKubeconfig, "controller-kubeconfig", "", "with -kubeconfig: the controller's, for a user of its own that -audit-user names (default: -kubeconfig)")
	fs.StringVar(&o.Stencil, "stencil", "bin/stencil", "the stencil binary to run the controller from")
	fs.StringVar(&o.AuditLog, "audit-log", "", "with -kubeconfig: the API server's JSON audit log, to count requests on the server side")
	fs.StringVar(&o.AuditUser, "audit-user", "", "with -audit-log: the user the controller authenticates as")
	fs.IntVar(&o.UnrelatedConfigMaps, "unrelated-configmaps", 20000, "ConfigMaps stencil must not cache, created before memory is read again")
	fs.IntVar(&o.UnrelatedSecrets, "unrelated-secrets", 5000, "Secrets stencil must not cache, created before memory is read again")
	fs.IntVar(&o.Samples, "samples", 20, "Deployment rollouts timed for the status latency")
	fs.BoolVar(&o.Keep, "keep", false, "leave the local cluster running at the end")
	fs.BoolVar(&o.Webhook, "webhook", true, "on the local cluster: the controller serves its admission webhooks (config/webhook on loopback), as a deployed controller does; false: --webhook-port=0")
	fs.StringVar(&o.HeapProfile, "heap-profile", "", "write the controller's heap profile (go tool pprof) with the N×children members to this file")
	fs.StringVar(&o.APIServerProfile, "apiserver-cpu-profile", "", "write kube-apiserver's CPU profile (go tool pprof) over the cold converge to this file, over the floor to FILE.floor, over the floor with parents to FILE.parents (its /debug/pprof, read as the admin)")
	fs.StringVar(&o.CPUProfile, "cpu-profile", "", "write the controller's CPU profile (go tool pprof) over the cold converge to this file, and over the floor with parents (its admission webhooks) to FILE.parents (render workers are other processes and not in it)")
	fs.BoolVar(&o.Rollout, "rollout", false, "run the rollout benchmark instead (make bench-rollout): one Bundle change rolled to -n parents all at once, in waves of 1, 10, 100 and the rest, and a failing revision")
	fs.IntVar(&o.RolloutNamespaces, "rollout-namespaces", 100, "with -rollout: the namespaces the parents are spread over")
	fs.DurationVar(&o.RolloutSoak, "rollout-soak", 10*time.Second, "with -rollout: each wave's soak")
	fs.DurationVar(&o.RolloutDeadline, "rollout-deadline", time.Minute, "with -rollout: the failing revision's progress deadline")
	fs.BoolVar(&o.Versions, "versions", false, "run the versions benchmark instead (make bench-versions): -n instances of a published kind (examples/versions' AppService v1), v2 made the storage version, v1 re-applied, -samples LISTs in v1 (through the conversion webhook) and v2, the storage migrated, v1 removed, and a Composition kept rendering by a values migration; exits 1 when a check fails")
}

// Validate reports what the flags cannot mean.
func (o Options) Validate() error {
	if o.N < 1 || o.Children < 1 || o.Samples < 1 {
		return errors.New("-n, -children and -samples must be at least 1")
	}
	if (o.AuditLog == "") != (o.AuditUser == "") {
		return errors.New("-audit-log and -audit-user go together")
	}
	if o.Versions && o.Rollout {
		return errors.New("-versions and -rollout are two benchmarks: choose one")
	}
	if o.Versions && !o.Webhook {
		return errors.New("-versions needs -webhook: the API server converts v1 through the controller's webhook server")
	}
	return nil
}
