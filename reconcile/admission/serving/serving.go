package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/reconcile/admission"

	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stencil-dev/stencil/reconcile/admission/server"
)

// CertSource is where the webhook server's serving certificate comes from.
type CertSource string

const (
	// CertsRotate: the controller makes a CA and a serving certificate
	// itself (github.com/open-policy-agent/cert-controller), keeps them in
	// the Secret ServingOptions.SecretName of ServingOptions.Namespace,
	// writes them to ServingOptions.CertDir, renews them before they
	// expire, and injects the CA into every entry of the webhook
	// configuration. No cert-manager needed.
	CertsRotate CertSource = "rotate"
	// CertsFiles: ServingOptions.CertDir already holds tls.crt and tls.key
	// (mounted from cert-manager's Secret, envtest's, or an admin's own),
	// reloaded when they change; setting the configuration's caBundle is
	// whoever made them's business.
	CertsFiles CertSource = "files"
)

// Defaults of ServingOptions, as config/ installs them.
const (
	// DefaultWebhookPort is the port the webhook server listens on (the
	// container port named webhook of config/manager).
	DefaultWebhookPort = 9443
	// DefaultWebhookService is the Service in front of the webhook server.
	DefaultWebhookService = "stencil-webhook"
	// DefaultWebhookNamespace is the controller's namespace when it runs
	// outside a pod.
	DefaultWebhookNamespace = "stencil-system"
	// DefaultWebhookCertSecret is the Secret CertsRotate keeps the CA and the
	// serving certificate in.
	DefaultWebhookCertSecret = "stencil-webhook-cert"
)

// serviceAccountNamespaceFile holds the namespace of the pod the
// controller runs in.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// PodNamespace returns the namespace of the pod the controller runs in,
// read from its service account's token mount, or DefaultWebhookNamespace
// outside a pod.
func PodNamespace() string {
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return DefaultWebhookNamespace
}

// ServingOptions say how the controller serves its admission webhook and
// where the API server reaches it.
type ServingOptions struct {
	// Port is the port the webhook server listens on.
	Port int
	// Host, when set, is the name the API server reaches the webhook server
	// by, directly rather than through Service (`make run`: localhost):
	// the server listens on Host:Port, the certificate names Host, and
	// every entry of ConfigName is pointed at URL() instead of a Service.
	Host string
	// CertDir is the folder of tls.crt and tls.key.
	CertDir string
	// Certs is where the certificate comes from: CertsRotate or CertsFiles.
	Certs CertSource
	// SecretName is the Secret, in Namespace, CertsRotate keeps the CA and
	// the certificate in. The controller creates it when it is missing.
	SecretName string
	// Service is the Service, in Namespace, the API server reaches the
	// webhook server through when Host is empty; the certificate names
	// Service.Namespace.svc.
	Service string
	// Namespace is the controller's namespace: the Secret's and the
	// Service's.
	Namespace string
	// ConfigName is the ValidatingWebhookConfiguration whose entries
	// CertsRotate injects the CA into (and Host points at URL()).
	ConfigName string
	// MutatingConfigName is the MutatingWebhookConfiguration CertsRotate
	// and Host treat as ConfigName; "" means admission.DefaultMutatingConfigName.
	// A cluster without it is served as before: the controller writes
	// the parents' ApplySet metadata itself.
	MutatingConfigName string
	// ClientCAFile, when set, is a PEM file of the CA(s) that sign the
	// client certificate the API server presents to the webhook (its
	// AdmissionConfiguration's WebhookAdmissionConfiguration kubeconfig).
	// The server verifies a certificate when one is presented; only a
	// verified caller's dry runs see live data (authn.go). Unset: no caller
	// is authenticated, and no dry run sees live data.
	ClientCAFile string
	// ClientNames narrows the verified callers to certificates bearing
	// one of these names (common name or DNS subject alternative name);
	// required with ClientCAFile (Validate).
	ClientNames []string
	// EnableHTTP2 offers HTTP/2 (ALPN h2); off by default (CVE-2023-44487).
	EnableHTTP2 bool
}

// DefaultServingOptions are the options `stencil controller` serves with
// when no webhook flag is given, in a pod of Namespace: rotated
// certificates, reached through the Service. `make run` and the e2e test
// change Host (localhost), Port and CertDir only.
func DefaultServingOptions() ServingOptions {
	return ServingOptions{
		Port:       DefaultWebhookPort,
		CertDir:    filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"),
		Certs:      CertsRotate,
		SecretName: DefaultWebhookCertSecret,
		Service:    DefaultWebhookService,
		Namespace:  PodNamespace(),
		ConfigName: admission.DefaultWebhookConfigName,

		MutatingConfigName: admission.DefaultMutatingConfigName,
	}
}

// mutatingConfigName is MutatingConfigName or its default.
func (o ServingOptions) mutatingConfigName() string {
	if o.MutatingConfigName != "" {
		return o.MutatingConfigName
	}
	return admission.DefaultMutatingConfigName
}

// Validate checks the options, naming the flag a bad value comes from.
func (o ServingOptions) Validate() error {
	var errs []error
	if o.Port <= 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port %d: not a port", o.Port))
	}
	if o.CertDir == "" {
		errs = append(errs, errors.New("--webhook-cert-dir is empty"))
	}
	switch o.Certs {
	case CertsRotate:
		for flag, name := range map[string]string{"--webhook-cert-secret": o.SecretName, "--webhook-namespace": o.Namespace} {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("%s %q: %s", flag, name, strings.Join(msgs, "; ")))
			}
		}
	case CertsFiles:
	default:
		errs = append(errs, fmt.Errorf("--webhook-certs %q: want %s or %s", o.Certs, CertsRotate, CertsFiles))
	}
	if o.Host == "" {
		if msgs := validation.IsDNS1035Label(o.Service); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--webhook-service %q: %s", o.Service, strings.Join(msgs, "; ")))
		}
	} else if net.ParseIP(o.Host) != nil {
		errs = append(errs, fmt.Errorf("--webhook-host %q: give a DNS name (such as localhost): the certificate names the host by DNS name only", o.Host))
	} else if msgs := validation.IsDNS1123Subdomain(o.Host); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--webhook-host %q: %s", o.Host, strings.Join(msgs, "; ")))
	}
	if len(o.ClientNames) > 0 && o.ClientCAFile == "" {
		errs = append(errs, errors.New("--webhook-client-name needs --webhook-client-ca: no certificate is verified without it"))
	}
	if o.ClientCAFile != "" && len(o.ClientNames) == 0 {
		// A CA often signs more than the API server's certificate (the
		// cluster's CA signs every user's): any of them would be taken
		// for the API server, reviewed and shown live values.
		errs = append(errs, errors.New("--webhook-client-ca needs --webhook-client-name: without it, every certificate the CA signs (a user's, a kubelet's) is taken for the API server's"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.ConfigName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--webhook-config %q: %s", o.ConfigName, strings.Join(msgs, "; ")))
	}
	return errors.Join(errs...)
}

// DNSName is the name the serving certificate is made for: Host, or the
// Service's in-cluster name Service.Namespace.svc.
func (o ServingOptions) DNSName() string {
	if o.Host != "" {
		return o.Host
	}
	return o.Service + "." + o.Namespace + ".svc"
}

// URL is where the API server calls the webhook when Host is set; "" when
// it goes through the Service.
func (o ServingOptions) URL() string {
	if o.Host == "" {
		return ""
	}
	return "https://" + net.JoinHostPort(o.Host, strconv.Itoa(o.Port)) + admission.WebhookPath
}

// Serving is the controller's webhook server and what keeps its
// certificate: build it with NewServing before the manager (the manager
// takes WebhookServer), then SetupWithManager.
type Serving struct {
	opts   ServingOptions
	ready  chan struct{}
	server webhook.Server
}

// NewServing returns the webhook serving of opts.
func NewServing(opts ServingOptions) (*Serving, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	tlsOpts, err := opts.TLSOptions()
	if err != nil {
		return nil, err
	}
	s := &Serving{opts: opts, ready: make(chan struct{})}
	s.server = &deferredServer{
		Server: server.New(webhook.Options{Host: opts.Host, Port: opts.Port, CertDir: opts.CertDir, TLSOpts: tlsOpts}),
		ready:  s.ready,
	}
	if opts.Certs == CertsFiles {
		close(s.ready)
	}
	return s, nil
}

// Options returns the options s was made with.
func (s *Serving) Options() ServingOptions { return s.opts }

// WebhookServer is the server for ctrl.Options.WebhookServer. It starts
// listening once the certificate is in CertDir and its CA in the
// configuration (Ready).
func (s *Serving) WebhookServer() webhook.Server { return s.server }

// Admission returns the controller's admission options for this
// serving: enabled, bounded by timeout, with s's configuration and Ready.
func (s *Serving) Admission(timeout time.Duration) admission.Options {
	return admission.Options{Enabled: true, Timeout: timeout, ConfigName: s.opts.ConfigName, MutatingConfigName: s.opts.mutatingConfigName(), Ready: s.ready, ClientNames: s.opts.ClientNames}
}

// Ready is closed once the webhook can be called: with CertsRotate, when
// the certificate is in CertDir and its CA injected into the
// configuration; with CertsFiles, at once.
func (s *Serving) Ready() <-chan struct{} { return s.ready }

// SetupWithManager adds to mgr, on every replica (not only the leader:
// every replica serves the webhook), what keeps the certificate and the
// configuration: with CertsRotate the Secret (created when missing),
// cert-controller's rotator and the writer of CertDir; with Host the
// controller that points the configuration's entries at URL(). mgr must
// have been made with WebhookServer.
func (s *Serving) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if mgr.GetWebhookServer() != s.server {
		return errors.New("the manager's webhook server is not Serving.WebhookServer()")
	}
	if s.opts.Certs != CertsRotate && s.opts.Host == "" {
		return nil
	}
	c, err := newServingCache(mgr, s.opts)
	if err != nil {
		return err
	}
	if s.opts.Certs == CertsRotate {
		if err := s.setupRotation(ctx, mgr, c); err != nil {
			return err
		}
	}
	if s.opts.Host != "" {
		return setupLoopback(mgr, s.opts, c)
	}
	return nil
}

// deferredServer is a webhook server that starts listening once ready is
// closed: controller-runtime's server reads its certificate when it
// starts, and the rotator writes it only after the manager started.
type deferredServer struct {
	webhook.Server
	ready <-chan struct{}
}

// Start waits for the certificate, then serves until ctx ends.
func (d *deferredServer) Start(ctx context.Context) error {
	select {
	case <-d.ready:
	case <-ctx.Done():
		return nil
	}
	return d.Server.Start(ctx)
}

// TLSOptions are the TLS settings of the webhook server of o: client
// certificates verified, when presented, against ClientCAFile; HTTP/2
// offered only with EnableHTTP2 (CVE-2023-44487, HTTP/2 rapid reset).
func (o ServingOptions) TLSOptions() ([]func(*tls.Config), error) {
	var opts []func(*tls.Config)
	if !o.EnableHTTP2 {
		opts = append(opts, server.DisableHTTP2)
	}
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--webhook-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--webhook-client-ca %s: no PEM certificate in it", o.ClientCAFile)
		}
		opts = append(opts, func(c *tls.Config) {
			c.ClientCAs = pool
			c.ClientAuth = tls.VerifyClientCertIfGiven
		})
	}
	return opts, nil
}
