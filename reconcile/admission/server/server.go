package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The webhook server's timeouts. Its port is open to the pod network (the
// API server's address cannot be selected portably), so any caller can
// open connections: each is bounded in time, whoever opened it.
// controller-runtime's server (v0.25) bounds only the headers (32 s) and
// idle connections (90 s) and takes no option for either; a body could
// take forever.
const (
	// ReadHeaderTimeout bounds the TLS handshake and the reading of a
	// request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds the reading of a whole request, headers and
	// body. The API server sends a review (at most 7 MiB, package
	// admission's bound) at once; a caller that sends slower has its
	// connection closed.
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds a request from the end of its headers to
	// the end of its answer: longer than the API server ever waits for a
	// webhook (30 s, the most timeoutSeconds allows).
	WriteTimeout = 40 * time.Second
	// IdleTimeout is how long a kept-alive connection may wait for
	// its next request: as long as the API server's client keeps one
	// (http.DefaultTransport's 90 s), so it never sends on a connection the
	// server is closing.
	IdleTimeout = 90 * time.Second
	// maxHeaderBytes bounds a request's headers: an AdmissionReview
	// POST carries a handful.
	maxHeaderBytes = 64 << 10
	// shutdownTimeout is how long a stopping server waits for the
	// requests it is serving.
	shutdownTimeout = time.Minute
)

// New returns the webhook server of o: controller-runtime's for
// registering paths (Register, with its per-path request metrics, and
// WebhookMux), served by an http.Server with the timeouts above. Its TLS
// settings are o.TLSOpts over controller-runtime's defaults, with the
// certificate read (and reloaded) from o.CertDir unless TLSOpts sets
// GetCertificate; o.ClientCAName is not supported (give the client CA in
// TLSOpts, as serving.ServingOptions.TLSOptions does). A negative o.Port disables
// it.
func New(o webhook.Options) webhook.Server {
	if o.WebhookMux == nil {
		o.WebhookMux = http.NewServeMux()
	}
	if o.Port == 0 {
		o.Port = webhook.DefaultPort
	}
	if o.CertName == "" {
		o.CertName = "tls.crt"
	}
	if o.KeyName == "" {
		o.KeyName = "tls.key"
	}
	return &server{Server: webhook.NewServer(o), opts: o}
}

// server is New's: controller-runtime's server, started by Start
// below on its mux.
type server struct {
	webhook.Server
	opts    webhook.Options
	started atomic.Bool
}

var _ webhook.Server = (*server)(nil)

// Start serves until ctx ends, then waits up to shutdownTimeout for
// the requests being served.
func (s *server) Start(ctx context.Context) error {
	if s.opts.Port < 0 {
		return nil
	}
	if s.opts.ClientCAName != "" {
		return errors.New("webhook server: ClientCAName is not supported; set ClientCAs in TLSOpts")
	}
	cfg, err := s.tlsConfig(ctx)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), cfg)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	srv := &http.Server{
		Handler:           s.opts.WebhookMux,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.FromContext(ctx).Error(err, "webhook server shutdown")
		}
	}()
	log.FromContext(ctx).Info("serving webhook server", "host", s.opts.Host, "port", s.opts.Port)
	s.started.Store(true)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	<-stopped
	return nil
}

// tlsConfig is controller-runtime's default (HTTP/2 offered) under
// o.TLSOpts, with the certificate of CertDir watched until ctx ends
// unless TLSOpts sets GetCertificate.
func (s *server) tlsConfig(ctx context.Context) (*tls.Config, error) {
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate != nil {
		return cfg, nil
	}
	w, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
	if err != nil {
		return nil, fmt.Errorf("webhook server certificate: %w", err)
	}
	cfg.GetCertificate = w.GetCertificate
	go func() {
		if err := w.Start(ctx); err != nil {
			log.FromContext(ctx).Error(err, "webhook certificate watcher")
		}
	}()
	return cfg, nil
}

// StartedChecker is healthy once the server has started and accepts a
// TLS connection.
func (s *server) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if s.opts.Port < 0 {
			return nil
		}
		if !s.started.Load() {
			return errors.New("webhook server has not been started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a liveness dial of our own port
		if err != nil {
			return fmt.Errorf("webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

// DisableHTTP2 offers only HTTP/1.1 in the TLS handshake (ALPN), so a
// client cannot speak HTTP/2 to the server: HTTP/2's stream reset floods
// (CVE-2023-44487, "rapid reset") cannot reach it. As kubebuilder
// scaffolds it for the webhook and metrics servers.
func DisableHTTP2(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }
