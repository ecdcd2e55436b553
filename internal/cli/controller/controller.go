package controller

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/reconcile/admission/serving"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/wiring"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/reconcile/admission"
	chartsource "github.com/stencil-dev/stencil/source"
)

// controllerFlags are the flags of `stencil controller`.
type controllerFlags struct {
	metricsAddr, probeAddr string
	metricsSecure          bool
	enableHTTP2            bool
	pprofAddr              string
	leaderElect            bool
	leaderElectNamespace   string
	opts                   engine.Options
	render                 flags.Render
	zap                    zap.Options
	qps                    float32
	burst                  int
	webhook                serving.ServingOptions
	webhookTimeout         time.Duration
	privateRegistries      []string
}

// DefaultServiceAccount is the default of --default-service-account: a
// dedicated ServiceAccount each tenant namespace is given for stencil,
// never the namespace's "default", which every pod runs as.
const DefaultServiceAccount = "stencil"

// NewCommand returns `stencil controller`, which runs the Composition and
// Bundle controllers (and the admission webhook) on the cluster kube
// connects to; version is written in the ApplySet tooling annotation.
func NewCommand(kube *genericclioptions.ConfigFlags, version string) *cobra.Command {
	f := &controllerFlags{opts: engine.Options{Version: version}, zap: zap.Options{Development: true}}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Composition and Bundle controllers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// An empty --shard= is a shard whose name went missing (e.g. the
			// pod label config/components/shard reads), not a request to
			// serve the unsharded Compositions.
			if f.opts.WriteAsController {
				if cmd.Flags().Changed("default-service-account") && f.opts.DefaultServiceAccount != DefaultServiceAccount {
					return fmt.Errorf("--write-as-controller and --default-service-account=%s are exclusive: "+
						"a parent naming no ServiceAccount is written either as the controller or as that ServiceAccount", f.opts.DefaultServiceAccount)
				}
				f.opts.DefaultServiceAccount = ""
			} else if f.opts.DefaultServiceAccount == "" {
				return fmt.Errorf("--default-service-account is empty: name the ServiceAccount stencil writes as (default %q), "+
					"or choose --write-as-controller", DefaultServiceAccount)
			}
			if cmd.Flags().Changed("shard") && f.opts.Shard == "" {
				return fmt.Errorf("--shard is empty: give a shard name, or leave the flag out to serve the Compositions without a %s label", shard.Label)
			}
			nets, err := chartsource.ParseNetworks(f.privateRegistries)
			if err != nil {
				return fmt.Errorf("--allow-private-registries: %w", err)
			}
			f.opts.SourcePolicy.AllowedNetworks = nets
			return runController(kube, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to; 0 disables it")
	fl.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve /metrics over HTTPS to callers with a bearer token the API server authenticates and authorizes to get /metrics (ClusterRole stencil-metrics-reader); false serves plain HTTP to anyone, for a trusted network only")
	fl.BoolVar(&f.enableHTTP2, "enable-http2", false, "offer HTTP/2 on the webhook and metrics servers; off by default against HTTP/2 stream-reset floods (CVE-2023-44487)")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz probes bind to; 0 disables them")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address Go's /debug/pprof endpoints bind to, for heap and CPU profiles; empty (the default) or 0 disables them")
	fl.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader, so only one of several replicas reconciles")
	fl.StringVar(&f.leaderElectNamespace, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's)")
	fl.IntVar(&f.opts.MaxConcurrentReconciles, "concurrency", 4, "Compositions reconciled at once")
	fl.IntVar(&f.opts.ApplyConcurrency, "apply-concurrency", 8, "objects of one apply stage applied at once")
	fl.Float32Var(&f.qps, "kube-api-qps", -1, "requests per second to the API server; a negative value turns client-side rate limiting off and leaves it to the server's API Priority and Fairness")
	fl.IntVar(&f.burst, "kube-api-burst", 0, "burst of requests to the API server, with --kube-api-qps >= 0")
	f.render.Add(fl)
	fl.StringVar(&f.opts.Shard, "shard", "", "reconcile only the Compositions labelled "+shard.Label+"=NAME, and elect a leader among this shard's replicas only; without it, only the Compositions without that label")
	fl.StringVar(&f.opts.DefaultServiceAccount, "default-service-account", DefaultServiceAccount,
		"ServiceAccount, in each parent's own namespace, whose identity applies, prunes and runs the hooks of a parent that names none "+
			"(spec.serviceAccountName; a published kind's annotation stencil.dev/service-account-name): the namespace's RBAC for it bounds what stencil writes there. "+
			"Exclusive with --write-as-controller")
	fl.BoolVar(&f.opts.WriteAsController, "write-as-controller", false,
		"write the members of a parent that names no ServiceAccount as the controller itself, bounded only by the controller's cluster-wide RBAC, "+
			"instead of impersonating --default-service-account: any tenant who may create a parent then gets the controller's rights "+
			"(install config/write-as-controller, which sets this flag and grants the write verbs config/default does not). "+
			"Exclusive with a --default-service-account other than the default")
	fl.StringVar(&f.opts.Namespace, "namespace", serving.PodNamespace(), "the controller's own namespace: the only one the Secrets a Bundle's spec.source names (credentials, CA) are read from, and where the parameters of stencil's admission policy are kept (the ConfigMap stencil-access; config/admission's binding names this namespace) (default: the pod's, else "+serving.DefaultWebhookNamespace+")")
	fl.StringSliceVar(&f.privateRegistries, "allow-private-registries", nil,
		"address ranges (CIDR, or single addresses) of loopback, private, link-local or otherwise non-public addresses that the pulls of Bundles' spec.source may reach, "+
			"such as a registry on the cluster's network (10.0.0.0/8); every other such address is refused when the connection is made, a name that resolves to one too. "+
			"0.0.0.0/0,::/0 allows every address")
	fl.BoolVar(&f.opts.SourcePolicy.AllowRedirects, "allow-source-redirects", false,
		"let chart repositories place charts (index entries, redirects), and registries redirect, on hosts other than the one a Bundle names; "+
			"credentials are never sent there. Without it those are refused (URLRefused), but an OCI registry's redirect of a blob, which the digest verifies")
	addWebhookFlags(fl, f)
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(zfs)
	fl.AddGoFlagSet(zfs)
	return cmd
}

// runController runs the manager with stencil's controllers and, when
// --webhook-port is not 0, the admission webhook, until a signal stops it.
func runController(kube *genericclioptions.ConfigFlags, f *controllerFlags) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))
	setControllerGC()
	if err := shard.Validate(f.opts.Shard); err != nil {
		return err
	}
	limits, err := f.render.Limits()
	if err != nil {
		return err
	}
	// The API server gives a webhook at most 30 s (timeoutSeconds).
	if f.webhook.Port != 0 && (f.webhookTimeout <= 0 || f.webhookTimeout > 30*time.Second) {
		return fmt.Errorf("--webhook-timeout %s: want more than 0s and at most 30s", f.webhookTimeout)
	}
	cfg, err := restConfig(kube, f)
	if err != nil {
		return err
	}
	var webhookServing *serving.Serving
	if f.webhook.Port != 0 {
		f.webhook.EnableHTTP2 = f.enableHTTP2
		if webhookServing, err = serving.NewServing(f.webhook); err != nil {
			return err
		}
	}
	mgr, err := newManager(cfg, f, webhookServing)
	if err != nil {
		return err
	}
	if err := metrics.Register(); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	admit, err := setupWebhook(ctx, mgr, webhookServing, f.webhookTimeout)
	if err != nil {
		return err
	}
	// The renderer: a pool of worker processes that bounds every
	// render's time and memory, stopped when the manager stops.
	pool, err := sandbox.New(sandbox.Options{Limits: limits, Workers: max(f.opts.MaxConcurrentReconciles, 1)})
	if err != nil {
		return err
	}
	defer pool.Close()
	f.opts.Renderer = pool
	reportIsolation(pool.Isolation())
	if admit.Enabled {
		// Reviews render in a small pool of their own, bounded in what may
		// wait (past it a review is allowed with a warning), so a burst of
		// dry runs neither delays nor kills the reconciles' workers.
		reviews, err := sandbox.New(sandbox.Options{Limits: limits, Workers: admissionWorkers, MaxWaiting: admissionMaxWaiting})
		if err != nil {
			return err
		}
		defer reviews.Close()
		admit.Renderer = reviews
	}
	if _, err := wiring.Setup(ctx, mgr, f.opts, admit); err != nil {
		return err
	}
	ctrl.Log.Info("starting stencil controller", "version", f.opts.Version, "shard", f.opts.Shard)
	return mgr.Start(ctx)
}

// restConfig is the config of the controller's API clients: kube's, with
// --kube-api-qps and --kube-api-burst, counting every request.
func restConfig(kube *genericclioptions.ConfigFlags, f *controllerFlags) (*rest.Config, error) {
	cfg, err := kube.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	// client-go's default of 5 requests/s (burst 10) would throttle every
	// pass of a busy controller; as controller-runtime's own config loader
	// does, stencil leaves rate limiting to the API server unless told.
	cfg.QPS, cfg.Burst = f.qps, f.burst
	// Count every request by verb and resource (stencil_api_requests_total),
	// the impersonating clients' too: they copy this config.
	cfg.Wrap(metrics.CountAPIRequests)
	return cfg, nil
}

// newManager makes the manager of the controllers (metrics, probes,
// leader election, the webhook server of webhookServing when not nil)
// with its health and readiness checks.
func newManager(cfg *rest.Config, f *controllerFlags, webhookServing *serving.Serving) (ctrl.Manager, error) {
	scheme, err := engine.NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   shard.CacheOptions(f.opts.Shard),
		Metrics:                 MetricsServer(f.metricsAddr, f.metricsSecure, f.enableHTTP2),
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        shard.LeaderElectionID(f.opts.Shard),
		LeaderElectionNamespace: f.leaderElectNamespace,
		// A leader that stops (a rollout, a drained node) gives the Lease
		// up as it goes, so the other replica leads within a retry period
		// (2 s) instead of waiting out the lease (15 s). Safe: the process
		// exits once the manager has stopped.
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 webhookServer(webhookServing),
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupWebhook adds the serving certificates of webhookServing to mgr and
// makes the manager ready only once the webhook serves, and returns the
// admission options its reviews take timeout for; the zero options (not
// enabled) when webhookServing is nil.
func setupWebhook(ctx context.Context, mgr ctrl.Manager, webhookServing *serving.Serving, timeout time.Duration) (admission.Options, error) {
	if webhookServing == nil {
		return admission.Options{}, nil
	}
	admit := webhookServing.Admission(timeout)
	if err := webhookServing.SetupWithManager(ctx, mgr); err != nil {
		return admission.Options{}, err
	}
	// Not ready until the webhook serves: the Service sends admission
	// requests to ready pods only.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return admission.Options{}, err
	}
	return admit, nil
}

// reportIsolation says at start what confines the render workers, in the
// log and in stencil_render_isolation.
func reportIsolation(iso sandbox.Isolation) {
	metrics.RenderIsolation.WithLabelValues("landlock").Set(boolGauge(iso.Landlock > 0))
	metrics.RenderIsolation.WithLabelValues("seccomp").Set(boolGauge(iso.Seccomp))
	if missing := iso.Missing(); len(missing) > 0 {
		ctrl.Log.Info("render workers are not fully confined", "missing", missing, "flag", "--render-isolation=best-effort")
		return
	}
	ctrl.Log.Info("render workers are confined", "landlockABI", iso.Landlock, "seccomp", iso.Seccomp)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// The admission webhook's render pool: renders at once, and renders that
// may wait for one (a review past them is allowed with a warning).
const (
	admissionWorkers    = 2
	admissionMaxWaiting = 16
)

// addWebhookFlags adds the flags of the admission webhook server.
func addWebhookFlags(fl *pflag.FlagSet, f *controllerFlags) {
	w, d := &f.webhook, serving.DefaultServingOptions()
	fl.IntVar(&w.Port, "webhook-port", d.Port, "port the admission webhook server listens on; 0 disables the webhook")
	fl.StringVar(&w.CertDir, "webhook-cert-dir", d.CertDir, "folder of the webhook server's tls.crt and tls.key")
	fl.StringVar((*string)(&w.Certs), "webhook-certs", string(d.Certs), "where the serving certificate comes from: rotate (the controller makes a CA and a certificate, keeps them in --webhook-cert-secret, writes them to --webhook-cert-dir, renews them and injects the CA into --webhook-config) or files (--webhook-cert-dir already holds them, e.g. from cert-manager; nothing is rotated or injected)")
	fl.StringVar(&w.SecretName, "webhook-cert-secret", d.SecretName, "Secret in --webhook-namespace that keeps the CA and the serving certificate, with --webhook-certs=rotate (created when missing)")
	fl.StringVar(&w.Service, "webhook-service", d.Service, "Service in --webhook-namespace the API server reaches the webhook through; the certificate names <service>.<namespace>.svc")
	fl.StringVar(&w.Namespace, "webhook-namespace", d.Namespace, "namespace of the webhook Service and certificate Secret (default: the pod's, else "+serving.DefaultWebhookNamespace+")")
	fl.StringVar(&w.ConfigName, "webhook-config", d.ConfigName, "ValidatingWebhookConfiguration of the webhook: its entries get the CA, and the Bundle controller keeps the published kinds' entry in it (config/rbac lets the controller update and patch "+admission.DefaultWebhookConfigName+" only: grant another name)")
	fl.StringVar(&w.Host, "webhook-host", d.Host, "name the API server reaches the webhook by directly, for a controller outside the cluster (make run: localhost): listen on it, make the certificate for it and point every entry of --webhook-config at https://<host>:<port>"+admission.WebhookPath+"; empty: through --webhook-service")
	fl.StringVar(&w.ClientCAFile, "webhook-client-ca", "", "PEM file of the CA that signs the client certificate the API server presents to the webhook (its --admission-control-config-file's WebhookAdmissionConfiguration kubeconfig): only a caller whose certificate it verifies gets live values in a dry run's warnings; unset, no caller does (see docs/operating.md)")
	fl.StringSliceVar(&w.ClientNames, "webhook-client-name", nil, "with --webhook-client-ca (required with it), the names (common name or DNS SAN) one of which the API server's client certificate must bear")
	fl.DurationVar(&f.webhookTimeout, "webhook-timeout", 3*time.Second, "time bound of one admission review; past it the request is allowed with a warning")
}

// webhookServer is the manager's webhook server: serving's, or none when
// the webhook is disabled.
func webhookServer(webhookServing *serving.Serving) webhook.Server {
	if webhookServing == nil {
		return nil
	}
	return webhookServing.WebhookServer()
}
