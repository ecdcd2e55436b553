package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/wiring"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/admission/server"
	"github.com/stencil-dev/stencil/reconcile/admission/serving"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/shard"
	chartsource "github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/templates"
)

// Controller is stencil's controller running in the test process against
// the test API server, as `stencil controller` runs it.
type Controller struct {
	// Client is a non-cached client for assertions; its requests are not counted.
	Client client.Client
	// Writes counts the controller's write requests (anything but GET).
	Writes atomic.Int64
	// WebhookReady is closed once the controller's admission webhook can be
	// called (ControllerOptions.Serving; nil otherwise).
	WebhookReady <-chan struct{}
	// Done is closed once the controller has stopped (its ctx ended), so a
	// test can start another one, as after a restart.
	Done <-chan struct{}

	renders sync.Map // "namespace/name" of a Composition → *atomic.Int64
	passes  passes
	stop    context.CancelFunc

	mu       sync.Mutex
	requests []string
	// emitted is, for each write of an event (events.k8s.io, by index
	// into requests), when the controller emitted it: its eventTime, or a
	// series' lastObservedTime.
	emitted map[int]time.Time
}

// Mark is a point in the controller's requests: the index of the next one
// and the time it was taken.
type Mark struct {
	// Index is the index of the first request after the mark (see
	// Requests).
	Index int
	// At is when the mark was taken.
	At time.Time
}

// Mark marks the requests sent so far, for WritesSince.
func (c *Controller) Mark() Mark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Mark{Index: len(c.requests), At: time.Now()}
}

// WritesSince returns the write requests (anything but GET) the controller
// sent since m to paths of namespace ns ("": any), as Requests shows
// them, leaving out the writes of events emitted before m. The event
// broadcaster sends events asynchronously, and retries a failed write 10 s
// later: an event of a pass before m may reach the server long after it,
// and is no write of what came after.
func (c *Controller) WritesSince(m Mark, ns string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i := m.Index; i < len(c.requests); i++ {
		r := c.requests[i]
		if strings.HasPrefix(r, "GET ") || (ns != "" && !strings.Contains(r, "/namespaces/"+ns+"/")) {
			continue
		}
		if at, ok := c.emitted[i]; ok && at.Before(m.At) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Stop stops the controller and waits until it has stopped.
func (c *Controller) Stop() {
	c.stop()
	<-c.Done
}

// Requests returns every request the controller sent so far, in order, as
// "METHOD /path?query".
func (c *Controller) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests)
}

// Renders returns how many times the controller rendered the Composition
// namespace/name.
func (c *Controller) Renders(namespace, name string) int64 {
	if n, ok := c.renders.Load(namespace + "/" + name); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// countingRenderer counts the renders of each Composition.
type countingRenderer struct {
	next plan.Renderer
	c    *Controller
}

func (r countingRenderer) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	n, _ := r.c.renders.LoadOrStore(in.Composition.Namespace+"/"+in.Composition.Name, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	return r.next.Render(ctx, b, in)
}

// StartController starts stencil's controllers against the API server of
// config until ctx ends. It may be called again once the previous
// controller is Done: a test restarts the controller that way. It writes
// the members of a parent naming no ServiceAccount as the controller
// itself (engine.Options.WriteAsController), for the suites that test
// other things than whose identity writes; StartWith starts one that
// impersonates, as `stencil controller` does by default.
func StartController(ctx context.Context, config *rest.Config) (*Controller, error) {
	return StartShard(ctx, config, "")
}

// StartShard starts, as StartController, a controller of shard (see
// engine.Options.Shard; "" is unsharded), beside any other running.
func StartShard(ctx context.Context, config *rest.Config, shard string) (*Controller, error) {
	return StartWith(ctx, config, ControllerOptions{Shard: shard, WriteAsController: true})
}

// ControllerNamespace is the controller's own namespace in tests (its
// ServiceAccount's, where the Secrets of Bundle sources are read).
const ControllerNamespace = "stencil-system"

// ControllerOptions are what StartWith changes in the controller that
// StartController starts.
type ControllerOptions struct {
	// Shard is engine.Options.Shard.
	Shard string
	// WriteAsController is engine.Options.WriteAsController. False, the
	// controller impersonates ServiceAccount "stencil" of a parent's
	// namespace when the parent names none, as `stencil controller` does.
	WriteAsController bool
	// Configure, when not nil, changes the controller's reconcile options
	// last (a test of options the fields above do not set).
	Configure func(*engine.Options)
	// Webhooks, when not nil, has the controller serve its admission
	// webhook (package admission) on the webhook server
	// these options describe (InstallWebhooks).
	Webhooks *envtest.WebhookInstallOptions
	// Serving, when not nil, has the controller serve its admission webhook
	// as `stencil controller` does with these webhook flags: its own
	// rotated certificate, and with Host the configuration pointed at
	// itself (`make run` and the e2e test: see serving.Serving). Not
	// with Webhooks.
	Serving *serving.ServingOptions
	// Admission are the webhook's options (package admission); Enabled is implied by
	// Webhooks and Serving.
	Admission admission.Options
	// WrapTransport, when not nil, wraps the transport of the controller's
	// requests, below the counting of Controller.Requests: a test makes
	// the API server seem to answer what it did not (a conflict, an
	// outage) to see what the controller then does.
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// StartWith starts, as StartController, a controller with o's options.
func StartWith(ctx context.Context, config *rest.Config, o ControllerOptions) (*Controller, error) {
	ctx, stop := context.WithCancel(ctx)
	c, err := startWith(ctx, stop, config, o)
	if err != nil {
		stop()
	}
	return c, err
}

// startWith is StartWith under ctx, which stop ends.
func startWith(ctx context.Context, stop context.CancelFunc, config *rest.Config, o ControllerOptions) (*Controller, error) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	scheme, err := engine.NewScheme()
	if err != nil {
		return nil, err
	}
	c := &Controller{stop: stop}
	if c.Client, err = client.New(config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	server, webhookServing, err := c.webhooks(o)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(c.countedConfig(config, o.WrapTransport), ctrl.Options{
		Scheme:                 scheme,
		Cache:                  shard.CacheOptions(o.Shard),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A restarted controller registers the same controller names again.
		Controller:    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		WebhookServer: server,
	})
	if err != nil {
		return nil, err
	}
	if err := metrics.Register(); err != nil {
		return nil, err
	}
	opts := engineOptions(o)
	limits := sandbox.Limits{Timeout: 3 * time.Second, Memory: 256 << 20}
	// The controller's own renderer (a pool of worker processes), counted.
	pool, err := sandbox.New(sandbox.Options{Limits: limits, Workers: opts.MaxConcurrentReconciles})
	if err != nil {
		return nil, err
	}
	opts.Renderer = countingRenderer{next: pool, c: c}
	opts.Observer = &c.passes
	wired, err := setUp(ctx, mgr, c.Client, opts, admissionOptions(o, webhookServing), webhookServing)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.start(ctx, mgr, pool)
	// The probe is made as a cluster administrator: the Env's (envtest),
	// else config's own (the local cluster's admin, as the e2e tests
	// start their controller).
	prober := c.Client
	if adminConfig != nil {
		if prober, err = client.New(adminConfig, client.Options{Scheme: scheme}); err != nil {
			return nil, err
		}
	}
	if err := admissionReady(ctx, prober, wired.Engine, o.Shard); err != nil {
		return nil, err
	}
	return c, nil
}

// countedConfig is config with the controller's requests counted (in c's
// Requests, below wrap when not nil, and in stencil_api_requests_total).
func (c *Controller) countedConfig(config *rest.Config, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	cfg := rest.CopyConfig(config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return countingTransport{rt, c}
	}
	cfg.Wrap(metrics.CountAPIRequests) // as `stencil controller` does
	return cfg
}

// webhooks is the webhook server of the manager o's Webhooks or Serving
// ask for, and the Serving of the latter (setting c's WebhookReady).
func (c *Controller) webhooks(o ControllerOptions) (webhook.Server, *serving.Serving, error) {
	server, err := webhookServer(o.Webhooks)
	if err != nil {
		return nil, nil, err
	}
	if o.Serving == nil {
		return server, nil, nil
	}
	if o.Webhooks != nil {
		return nil, nil, errors.New("ControllerOptions: Webhooks and Serving are exclusive")
	}
	webhookServing, err := serving.NewServing(*o.Serving)
	if err != nil {
		return nil, nil, err
	}
	c.WebhookReady = webhookServing.Ready()
	return webhookServing.WebhookServer(), webhookServing, nil
}

// engineOptions are the reconcile options of the controller o asks for,
// its renderer and observer not yet set.
func engineOptions(o ControllerOptions) engine.Options {
	// The controller's default concurrency, and render limits short
	// enough for tests to see overruns quickly.
	// The tests' registries (package sourcetest) listen on loopback: the
	// admin's allowance, as --allow-private-registries=127.0.0.0/8,::1
	// gives it; without it every pull of theirs is refused.
	opts := engine.Options{Version: "v0.0.0-test", MaxConcurrentReconciles: 4, ApplyConcurrency: 4, Shard: o.Shard,
		WriteAsController: o.WriteAsController, Namespace: ControllerNamespace, AdmissionMargin: AdmissionMargin, SourcePolicy: LoopbackRegistries()}
	if !o.WriteAsController {
		opts.DefaultServiceAccount = DefaultServiceAccount
	}
	if o.Configure != nil {
		o.Configure(&opts)
	}
	return opts
}

// admissionOptions are the admission webhook's options: o's Admission,
// enabled, with Webhooks; webhookServing's, as runController wires them,
// with Serving; disabled with neither.
func admissionOptions(o ControllerOptions, webhookServing *serving.Serving) admission.Options {
	if webhookServing != nil {
		return webhookServing.Admission(o.Admission.Timeout)
	}
	var admit admission.Options
	if o.Webhooks != nil {
		admit = o.Admission
		admit.Enabled = true
		if len(admit.ClientNames) == 0 {
			admit.ClientNames = []string{WebhookClientName}
		}
	}
	return admit
}

// setUp sets the controllers up in mgr with opts and admit, after the
// serving certificates of webhookServing (when not nil) and the
// controller's namespace (made with c when missing).
func setUp(ctx context.Context, mgr ctrl.Manager, c client.Client, opts engine.Options, admit admission.Options, webhookServing *serving.Serving) (*wiring.Controllers, error) {
	if webhookServing != nil {
		// As runController wires it.
		if err := webhookServing.SetupWithManager(ctx, mgr); err != nil {
			return nil, err
		}
	}
	if err := ensureNamespace(ctx, c, opts.Namespace); err != nil {
		return nil, err
	}
	return wiring.Setup(ctx, mgr, opts, admit)
}

// start runs mgr until ctx ends, then closes pool and c's Done; a manager
// that fails ends the test process.
func (c *Controller) start(ctx context.Context, mgr ctrl.Manager, pool *sandbox.Pool) {
	done := make(chan struct{})
	c.Done = done
	go func() {
		defer close(done)
		defer pool.Close()
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
			os.Exit(1)
		}
	}()
}

// admissionReady waits until the API server admits the parents of shard
// that name no ServiceAccount: until the controller r has published its
// default to stencil's admission policy, and the API server's informers
// have the published parameters (some time after the write), every such
// parent is refused. Tests start once one is admitted.
func admissionReady(ctx context.Context, c client.Client, r interface{ AdmissionReady() <-chan struct{} }, shardName string) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	select {
	case <-r.AdmissionReady():
	case <-ctx.Done():
		return errors.New("the controller did not publish its default ServiceAccount to stencil's admission policy in time")
	}
	var labels map[string]string
	if shardName != "" {
		labels = map[string]string{shard.Label: shardName}
	}
	return Admitted(ctx, c, ControllerNamespace, labels)
}

// AdmissionReady waits, as StartWith does, until the API server admits
// the parents of shard (its label's value; "" unsharded) that name no
// ServiceAccount, once r (a controller a test built itself) has
// published its default.
func AdmissionReady(t testing.TB, c client.Client, r interface{ AdmissionReady() <-chan struct{} }, shardName string) {
	t.Helper()
	if err := admissionReady(context.Background(), c, r, shardName); err != nil {
		t.Fatal(err)
	}
}

// ensureNamespace creates namespace ns when it does not exist (a suite
// whose controller may not create namespaces makes it itself).
func ensureNamespace(ctx context.Context, c client.Client, ns string) error {
	err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		err = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("make namespace %s: %w", ns, err)
	}
	return nil
}

// AdmissionMargin is the controllers' engine.Options.AdmissionMargin in
// tests: a single API server applies a policy change within a second or
// two; production's default allows for several and for clock skew.
const AdmissionMargin = 2 * time.Second

// LoopbackRegistries is the source policy of a controller under test: the
// default, with loopback addresses allowed, where the tests' registries
// listen.
func LoopbackRegistries() chartsource.Policy {
	return chartsource.Policy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
}

// DefaultServiceAccount is the default ServiceAccount of the controllers
// StartWith starts without WriteAsController: `stencil controller`'s.
const DefaultServiceAccount = "stencil"

// webhookServer serves on the host, port and certificates of w, with the
// controller's own server (package reconcile/admission/server: its timeouts); with no w,
// the manager's default server, never started (no webhook registers).
func webhookServer(w *envtest.WebhookInstallOptions) (webhook.Server, error) {
	if w == nil {
		return nil, nil
	}
	// As `stencil controller --webhook-client-ca`: the API server's
	// client certificate is verified (Env.WebhookClient).
	tlsOpts, err := serving.ServingOptions{ClientCAFile: webhookClientCA}.TLSOptions()
	if err != nil {
		return nil, err
	}
	return server.New(webhook.Options{Host: w.LocalServingHost, Port: w.LocalServingPort, CertDir: w.LocalServingCertDir, TLSOpts: tlsOpts}), nil
}

// countingTransport counts write requests and records every request.
type countingTransport struct {
	next http.RoundTripper
	c    *Controller
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		t.c.Writes.Add(1)
	}
	at, isEvent := emittedAt(req)
	t.c.mu.Lock()
	if isEvent {
		if t.c.emitted == nil {
			t.c.emitted = map[int]time.Time{}
		}
		t.c.emitted[len(t.c.requests)] = at
	}
	t.c.requests = append(t.c.requests, req.Method+" "+req.URL.RequestURI())
	t.c.mu.Unlock()
	return t.next.RoundTrip(req)
}

// emittedAt reads, from a write of an event (events.k8s.io/v1: a create,
// in protobuf or JSON, or a patch of its series), when the event was
// emitted: a series' lastObservedTime, else its eventTime. The body is
// read and put back.
func emittedAt(req *http.Request) (time.Time, bool) {
	if req.Method == http.MethodGet || req.Body == nil || !strings.HasPrefix(req.URL.Path, "/apis/events.k8s.io/") {
		return time.Time{}, false
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return time.Time{}, false
	}
	ev := &eventsv1.Event{}
	if obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
		decoded, ok := obj.(*eventsv1.Event)
		if !ok {
			return time.Time{}, false
		}
		ev = decoded
	} else if json.Unmarshal(body, ev) != nil { // a patch
		return time.Time{}, false
	}
	at := ev.EventTime.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(at) {
		at = ev.Series.LastObservedTime.Time
	}
	return at, !at.IsZero()
}

// WriteKubeconfig writes a kubeconfig for the test API server (as cluster
// admin) to path, for commands such as kubectl and stencil's CLI.
func (e *Env) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	cfg.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*cfg, path)
}
