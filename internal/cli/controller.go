package cli

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stencil-dev/stencil/reconcile"
)

// controllerFlags are the flags of `stencil controller`.
type controllerFlags struct {
	metricsAddr, probeAddr string
	pprofAddr              string
	leaderElect            bool
	leaderElectNamespace   string
	opts                   reconcile.Options
	render                 renderFlags
	zap                    zap.Options
	qps                    float32
	burst                  int
}

func newControllerCommand(kube *genericclioptions.ConfigFlags, version string) *cobra.Command {
	f := &controllerFlags{opts: reconcile.Options{Version: version}, zap: zap.Options{Development: true}}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Composition and Bundle controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// An empty --shard= is a shard whose name went missing (e.g. the
			// pod label config/components/shard reads), not a request to
			// serve the unsharded Compositions.
			if cmd.Flags().Changed("shard") && f.opts.Shard == "" {
				return fmt.Errorf("--shard is empty: give a shard name, or leave the flag out to serve the Compositions without a %s label", reconcile.LabelShard)
			}
			return runController(kube, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to; 0 disables it")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to; 0 disables them")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address Go's /debug/pprof endpoints bind to, for heap and CPU profiles; empty (the default) or 0 disables them")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader, so only one of several replicas reconciles")
	fl.StringVar(&f.leaderElectNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	fl.IntVar(&f.opts.MaxConcurrentReconciles, "concurrency", 4, "Compositions reconciled at once")
	fl.IntVar(&f.opts.ApplyConcurrency, "apply-concurrency", 8, "objects of one apply stage applied at once")
	fl.Float32Var(&f.qps, "kube-api-qps", -1, "requests per second to the API server; a negative value turns client-side rate limiting off and leaves it to the server's API Priority and Fairness")
	fl.IntVar(&f.burst, "kube-api-burst", 0, "burst of requests to the API server, with --kube-api-qps >= 0")
	f.render.add(fl)
	fl.StringVar(&f.opts.Shard, "shard", "", "reconcile only the Compositions labelled "+reconcile.LabelShard+"=NAME, and elect a leader among this shard's replicas only; without it, only the Compositions without that label")
	fl.StringVar(&f.opts.DefaultServiceAccount, "default-service-account", "", "ServiceAccount (in each Composition's namespace) to impersonate when spec.serviceAccountName is empty")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(zfs)
	fl.AddGoFlagSet(zfs)
	return cmd
}

func runController(kube *genericclioptions.ConfigFlags, f *controllerFlags) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	setControllerGC()
	if err := reconcile.ValidateShard(f.opts.Shard); err != nil {
		return err
	}
	limits, err := f.render.limits()
	if err != nil {
		return err
	}
	f.opts.RenderLimits = limits
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// client-go's default of 5 requests/s (burst 10) would throttle every
	// pass of a busy controller; as controller-runtime's own config loader
	// does, stencil leaves rate limiting to the API server unless told.
	cfg.QPS, cfg.Burst = f.qps, f.burst
	// Count every request by verb and resource (stencil_api_requests_total),
	// the impersonating clients' too: they copy this config.
	cfg.Wrap(reconcile.CountAPIRequests)
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   reconcile.ShardCacheOptions(f.opts.Shard),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        reconcile.LeaderElectionID(f.opts.Shard),
		LeaderElectionNamespace: f.leaderElectNamespace,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if err := reconcile.RegisterMetrics(); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := reconcile.SetupWithManager(ctx, mgr, f.opts); err != nil {
		return err
	}
	ctrl.Log.Info("starting stencil controller", "version", f.opts.Version, "shard", f.opts.Shard)
	return mgr.Start(ctx)
}
