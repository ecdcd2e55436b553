package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/stencil-dev/stencil/reconcile/admission/server"
)

// TestServerTimeouts: the webhook server answers a caller that sends its
// request at once, and closes the connection of one that sends its
// headers too slowly once WebhookReadHeaderTimeout has passed
// (controller-runtime's server waits 32 s).
func TestServerTimeouts(t *testing.T) {
	cert := selfSigned(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := server.New(webhook.Options{Host: "127.0.0.1", Port: port, TLSOpts: []func(*tls.Config){
		server.DisableHTTP2,
		func(c *tls.Config) {
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }
		},
	}})
	s.Register("/ok", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dial := func() *tls.Conn {
		t.Helper()
		var conn *tls.Conn
		var err error
		for range 50 { // until the server listens
			if conn, err = tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}); err == nil { //nolint:gosec // a test's own server
				return conn
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatal(err)
		return nil
	}

	t.Run("a prompt request is answered", func(t *testing.T) {
		conn := dial()
		defer func() { _ = conn.Close() }() // only frees the test's end; the server's answer was read
		fmt.Fprintf(conn, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(conn)
		if len(b) < 12 || string(b[:12]) != "HTTP/1.1 200" {
			t.Errorf("answer %q, want 200", b)
		}
	})

	t.Run("slow headers are cut", func(t *testing.T) {
		conn := dial()
		defer func() { _ = conn.Close() }() // only frees the test's end; the server's answer was read
		start := time.Now()
		fmt.Fprintf(conn, "GET /ok HTTP/1.1\r\n")
		_ = conn.SetReadDeadline(start.Add(server.ReadHeaderTimeout + 10*time.Second))
		_, err := io.ReadAll(conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection of a caller sending half its headers still open after %s", time.Since(start))
		}
		if took := time.Since(start); took < server.ReadHeaderTimeout-time.Second {
			t.Errorf("closed after %s, before the header timeout %s", took, server.ReadHeaderTimeout)
		}
	})

	t.Run("ClientCAName is refused", func(t *testing.T) {
		err := server.New(webhook.Options{Port: port + 1, ClientCAName: "ca.crt"}).Start(ctx)
		if err == nil {
			t.Error("Start with ClientCAName: no error")
		}
	})
}

// selfSigned is a serving certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
