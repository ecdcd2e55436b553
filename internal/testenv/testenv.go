package testenv

import (
	"github.com/stencil-dev/stencil/internal/sandbox"

	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running kube-apiserver and etcd with stencil's CRDs installed.
type Env struct {
	// Config connects to the API server as a cluster administrator.
	Config *rest.Config
	// WebhookClient is the client certificate the API server presents to
	// admission webhooks; the webhook servers StartWith makes verify it.
	WebhookClient WebhookClient
	env           *envtest.Environment
}

// adminConfig is the running Env's Config (a cluster administrator): the
// identity StartWith probes admission as, whatever identity the
// controller it starts has (the controller may not create parents).
var adminConfig *rest.Config

// Root returns the repository's top folder, found from this source file.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Start starts the control plane. It fails when KUBEBUILDER_ASSETS does not
// name a folder holding kube-apiserver and etcd: run the tests with `make test`,
// which builds them.
func Start() (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, which builds kube-apiserver and etcd")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("KUBEBUILDER_ASSETS=%s lacks %s: run `make envtest-assets`: %w", assets, bin, err)
		}
	}
	e := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	// The API server authenticates to admission webhooks with a client
	// certificate, as docs/operating.md has a cluster admin set it up.
	dir, err := os.MkdirTemp("", "stencil-webhook-client-")
	if err != nil {
		return nil, err
	}
	client, err := newWebhookClient(dir)
	if err != nil {
		_ = os.RemoveAll(dir) // the error that stopped the start is the one to report
		return nil, fmt.Errorf("make the webhook client certificate: %w", err)
	}
	e.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", client.AdmissionConfigFile)
	cfg, err := e.Start()
	if err != nil {
		_ = os.RemoveAll(dir) // the error that stopped the start is the one to report
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	webhookClientCA = client.CAFile
	adminConfig = cfg
	return &Env{Config: cfg, WebhookClient: client, env: e}, nil
}

// Stop stops the control plane and removes its data.
func (e *Env) Stop() error {
	err := e.env.Stop()
	if e.WebhookClient.CAFile != "" {
		err = errors.Join(err, os.RemoveAll(filepath.Dir(e.WebhookClient.CAFile)))
	}
	return err
}

// Run is the body of a TestMain: it starts the environment, stores it in
// *env, runs each setup (such as starting a manager) with a context that is
// cancelled when the tests end, runs the tests, stops the environment and
// returns the exit code.
func Run(m *testing.M, env **Env, setup ...func(context.Context, *Env) error) int {
	// The controller renders in worker processes: this very test binary,
	// re-executed. In a worker, Main serves renders and exits.
	sandbox.Main()
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, s := range setup {
		if err := s(ctx, e); err != nil {
			fmt.Fprintln(os.Stderr, "set up tests:", err)
			return 1
		}
	}
	return m.Run()
}

// Namespace creates a namespace with a unique name for one test and deletes
// it when the test ends.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test-" + rand.String(8)}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

// InstallWebhooks installs stencil's Validating- and
// MutatingWebhookConfiguration from config/webhook as envtest's webhook
// install options do (a name renames the mutating one NAME-mutating): every entry sends
// its requests to a webhook server on loopback whose host, port and
// serving certificates the returned options hold (pass them to StartWith),
// and trusts the CA made for it. name, when not empty, renames the
// configuration; selector, when not nil, limits every entry to the
// namespaces it selects, so that only the tests that ask for admission go
// through it. Remove the configuration, and the certificates with
// Cleanup, when done.
func InstallWebhooks(config *rest.Config, name string, selector *metav1.LabelSelector) (*envtest.WebhookInstallOptions, error) {
	o := &envtest.WebhookInstallOptions{Paths: []string{filepath.Join(Root(), "config", "webhook")}}
	if err := o.PrepWithoutInstalling(); err != nil {
		return nil, fmt.Errorf("prepare the webhooks: %w", err)
	}
	for _, c := range o.ValidatingWebhooks {
		if name != "" {
			c.Name = name
		}
		for i := range c.Webhooks {
			c.Webhooks[i].NamespaceSelector = selector.DeepCopy()
		}
	}
	for _, c := range o.MutatingWebhooks {
		if name != "" {
			c.Name = name + "-mutating"
		}
		for i := range c.Webhooks {
			c.Webhooks[i].NamespaceSelector = selector.DeepCopy()
		}
	}
	if err := o.Install(config); err != nil {
		_ = o.Cleanup()
		return nil, fmt.Errorf("install the webhooks: %w", err)
	}
	return o, nil
}

// FreePort returns a TCP port of 127.0.0.1 nothing listens on, for a
// server a test starts (a webhook server on loopback).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
