package serving_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/reconcile/admission/serving"
)

// TestServingOptions: where the certificate points and the configuration
// calls, through the Service or on a host, and which options are refused.
func TestServingOptions(t *testing.T) {
	inCluster := serving.DefaultServingOptions()
	inCluster.Namespace = "stencil-system"
	loopback := inCluster
	loopback.Host, loopback.Port = "localhost", 19443
	for _, tc := range []struct {
		name         string
		opts         serving.ServingOptions
		dnsName, url string
	}{
		{"through the Service", inCluster, "stencil-webhook.stencil-system.svc", ""},
		{"on loopback", loopback, "localhost", "https://localhost:19443/validate-stencil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.opts.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if got := tc.opts.DNSName(); got != tc.dnsName {
				t.Errorf("DNSName() = %q, want %q", got, tc.dnsName)
			}
			if got := tc.opts.URL(); got != tc.url {
				t.Errorf("URL() = %q, want %q", got, tc.url)
			}
		})
	}

	for _, tc := range []struct {
		name string
		edit func(*serving.ServingOptions)
		want string
	}{
		{"an IP for a host", func(o *serving.ServingOptions) { o.Host = "127.0.0.1" }, "--webhook-host"},
		{"no cert folder", func(o *serving.ServingOptions) { o.CertDir = "" }, "--webhook-cert-dir"},
		{"an unknown cert source", func(o *serving.ServingOptions) { o.Certs = "cert-manager" }, "--webhook-certs"},
		{"no Secret to rotate into", func(o *serving.ServingOptions) { o.SecretName = "" }, "--webhook-cert-secret"},
		{"no Service and no host", func(o *serving.ServingOptions) { o.Service = "" }, "--webhook-service"},
		{"a client name without a client CA", func(o *serving.ServingOptions) { o.ClientNames = []string{"kube-apiserver"} }, "--webhook-client-ca"},
		// Every certificate the CA signs would pass for the API server's.
		{"a client CA without a client name", func(o *serving.ServingOptions) { o.ClientCAFile = "/ca.crt" }, "--webhook-client-name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := inCluster
			tc.edit(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
			if _, err := serving.NewServing(o); err == nil {
				t.Errorf("NewServing accepted options Validate refuses")
			}
		})
	}

	t.Run("a client CA that holds no certificate is refused", func(t *testing.T) {
		notPEM := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{filepath.Join(t.TempDir(), "missing.crt"), notPEM} {
			o := inCluster
			o.ClientCAFile, o.ClientNames = file, []string{"kube-apiserver"}
			if _, err := serving.NewServing(o); err == nil || !strings.Contains(err.Error(), "--webhook-client-ca") {
				t.Errorf("NewServing with --webhook-client-ca=%s: %v, want an error naming the flag", file, err)
			}
		}
	})

	t.Run("files are ready at once", func(t *testing.T) {
		o := inCluster
		o.Certs = serving.CertsFiles
		s, err := serving.NewServing(o)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.Ready():
		default:
			t.Error("Ready is not closed with --webhook-certs=files: the certificate is already there")
		}
	})
}
