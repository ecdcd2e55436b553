package controller

import (
	"net"
	"os"
	"path/filepath"
)

// WebhookArgs are the controller's flags that serve its admission
// webhooks on loopback, as `make run` does (hack/run.sh): a certificate
// for localhost in clusterDir/webhook-certs, the local cluster's webhook
// client CA (clusterDir/pki) verified.
func WebhookArgs(clusterDir string) ([]string, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(clusterDir, "webhook-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	return []string{"--webhook-host", "localhost", "--webhook-port", port, "--webhook-cert-dir", certs,
		"--webhook-namespace", "stencil-system", "--webhook-client-ca", filepath.Join(clusterDir, "pki", "webhook-client-ca.crt"), "--webhook-client-name", "kube-apiserver-webhook-client"}, nil
}
