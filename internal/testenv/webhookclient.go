package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// WebhookClientName is the common name of the client certificate the test
// API server presents to admission webhooks.
const WebhookClientName = "stencil-test-apiserver"

// WebhookClient are the files of the client certificate the test API
// server presents to every admission webhook (its
// --admission-control-config-file), as a cluster admin sets it up for
// stencil's webhook (see docs/operating.md): the CA that signed it, for
// the webhook server's --webhook-client-ca, and the certificate and key,
// for a test that calls the webhook as the API server does.
type WebhookClient struct {
	CAFile, CertFile, KeyFile string
	// AdmissionConfigFile is the API server's AdmissionConfiguration.
	AdmissionConfigFile string
}

// webhookClientCA is the CA file of the running Env's webhook client
// certificate: the webhook servers StartWith makes verify callers
// against it.
var webhookClientCA string

// newWebhookClient makes, in dir, a CA, a client certificate it signs
// (common name WebhookClientName), a kubeconfig presenting it to every
// webhook ("*") and the AdmissionConfiguration naming that kubeconfig for
// the validating and mutating webhook plugins.
func newWebhookClient(dir string) (WebhookClient, error) {
	w := WebhookClient{
		CAFile: filepath.Join(dir, "webhook-client-ca.crt"), CertFile: filepath.Join(dir, "webhook-client.crt"),
		KeyFile: filepath.Join(dir, "webhook-client.key"), AdmissionConfigFile: filepath.Join(dir, "admission.yaml"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return w, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stencil-test-webhook-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return w, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return w, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return w, err
	}
	certDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: WebhookClientName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return w, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return w, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	kubeconfig := filepath.Join(dir, "webhook-client.kubeconfig")
	files := map[string]string{
		w.CAFile: string(caPEM), w.CertFile: string(certPEM), w.KeyFile: string(keyPEM),
		kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: '*'
  user:
    client-certificate: %s
    client-key: %s
`, w.CertFile, w.KeyFile),
		w.AdmissionConfigFile: fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, kubeconfig),
	}
	for path, data := range files {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			return w, err
		}
	}
	return w, nil
}
