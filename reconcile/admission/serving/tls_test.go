package serving

import (
	"crypto/tls"
	"testing"
)

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
