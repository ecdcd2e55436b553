package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/reconcile"
)

// Controller is stencil's controller running in the test process against
// the test API server, as `stencil controller` runs it.
type Controller struct {
	// Client is a non-cached client for assertions; its requests are not counted.
	Client client.Client
	// Writes counts the controller's write requests (anything but GET).
	Writes atomic.Int64
}

// StartController starts stencil's controllers against the API server of
// config until ctx ends.
func StartController(ctx context.Context, config *rest.Config) (*Controller, error) {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return nil, err
	}
	c := &Controller{}
	if c.Client, err = client.New(config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &c.Writes} }
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  reconcile.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, err
	}
	if err := reconcile.RegisterMetrics(); err != nil {
		return nil, err
	}
	// The controller's default concurrency, and render limits short
	// enough for tests to see overruns quickly.
	opts := reconcile.Options{Version: "v0.0.0-test", MaxConcurrentReconciles: 4, ApplyConcurrency: 4,
		RenderLimits: sandbox.Limits{Timeout: 3 * time.Second, Memory: 256 << 20}}
	if err := reconcile.SetupWithManager(ctx, mgr, opts); err != nil {
		return nil, err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
			os.Exit(1)
		}
	}()
	return c, nil
}

// countingTransport counts write requests.
type countingTransport struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		t.writes.Add(1)
	}
	return t.next.RoundTrip(req)
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
