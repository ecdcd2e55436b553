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
