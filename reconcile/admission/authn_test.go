package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"testing"
)

// TestVerifiedCaller: only a connection whose client certificate was
// verified is an authenticated caller, and with names, only one whose
// certificate bears one of them.
func TestVerifiedCaller(t *testing.T) {
	leaf := &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-webhook-client"}, DNSNames: []string{"apiserver.example"}}
	verified := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf}}}
	presentedOnly := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	for _, tc := range []struct {
		name  string
		cs    *tls.ConnectionState
		names []string
		want  bool
	}{
		{"plain HTTP", nil, nil, false},
		{"TLS without a certificate", &tls.ConnectionState{}, nil, false},
		{"a certificate presented, not verified", presentedOnly, nil, false},
		{"verified, any name", verified, nil, true},
		{"verified, its common name", verified, []string{"kube-apiserver-webhook-client"}, true},
		{"verified, its DNS name", verified, []string{"apiserver.example"}, true},
		{"verified, another name", verified, []string{"someone-else"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifiedCaller(tc.cs, tc.names); got != tc.want {
				t.Errorf("verifiedCaller = %v, want %v", got, tc.want)
			}
			r := &http.Request{TLS: tc.cs}
			if got := callerAuthenticated(withCaller(tc.names)(context.Background(), r)); got != tc.want {
				t.Errorf("callerAuthenticated = %v, want %v", got, tc.want)
			}
		})
	}
	if callerAuthenticated(context.Background()) {
		t.Error("a context withCaller did not make is authenticated")
	}
}

// TestTLSOptions: HTTP/2 is not offered unless enabled, and a client CA
// makes the server verify a presented certificate.
func TestTLSOptions(t *testing.T) {
	apply := func(o ServingOptions) *tls.Config {
		t.Helper()
		opts, err := o.TLSOptions()
		if err != nil {
			t.Fatal(err)
		}
		c := &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
		for _, f := range opts {
			f(c)
		}
		return c
	}
	if c := apply(ServingOptions{}); len(c.NextProtos) != 1 || c.NextProtos[0] != "http/1.1" || c.ClientAuth != tls.NoClientCert {
		t.Errorf("default: NextProtos %v, ClientAuth %v; want http/1.1 only and no client certificate asked", c.NextProtos, c.ClientAuth)
	}
	if c := apply(ServingOptions{EnableHTTP2: true}); len(c.NextProtos) != 2 {
		t.Errorf("EnableHTTP2: NextProtos %v, want h2 kept", c.NextProtos)
	}
}
