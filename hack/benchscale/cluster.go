package main

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
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// controllerUser is the user the controller authenticates as on the
// local cluster, so the audit log tells its requests from the harness's.
const controllerUser = "stencil-bench-controller"

// kcmControllers are kube-controller-manager's controllers on the bench
// cluster: all but those that answer Services (nothing the benchmark
// measures reads Endpoints or EndpointSlices).
const kcmControllers = "*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller"

// localCluster is hack/local-cluster.sh's cluster, with its audit log on.
type localCluster struct {
	root, dir string
	// nodes is how many kwok nodes to make; the script's default when 0.
	nodes int
}

func (c localCluster) script(verb string) error {
	cmd := exec.Command(filepath.Join(c.root, "hack", "local-cluster.sh"), verb)
	// Every Service of the floor and of the controller takes a cluster
	// IP: a /16 holds 65,534 of them. The endpoints controllers write an
	// Endpoints and an EndpointSlice for every Service, and delete them
	// with it, behind the Services' creation by seconds: the floor's
	// would be written, and deleted, during the cold converge (1,540
	// of the 10,500 requests in its window in one run), which measures
	// neither.
	cmd.Env = append(os.Environ(), "STENCIL_CLUSTER_DIR="+c.dir, "STENCIL_AUDIT=1", "STENCIL_SERVICE_CIDR=10.0.0.0/16",
		"STENCIL_KCM_CONTROLLERS="+kcmControllers)
	if c.nodes > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("STENCIL_NODES=%d", c.nodes))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/local-cluster.sh %s: %w", verb, err)
	}
	return nil
}

func (c localCluster) up() error   { return c.script("up") }
func (c localCluster) down() error { return c.script("down") }

func (c localCluster) kubeconfig() string { return filepath.Join(c.dir, "kubeconfig") }
func (c localCluster) audit() auditLog    { return auditLog{path: filepath.Join(c.dir, "audit.log")} }

// controllerKubeconfig writes a kubeconfig for the admin's cluster whose
// user is a client certificate of its own, signed by the cluster's CA, for
// controllerUser in system:masters. It returns the file's path.
func (c localCluster) controllerKubeconfig() (string, error) {
	certPEM, keyPEM, err := signClientCert(filepath.Join(c.dir, "pki"), controllerUser, "system:masters")
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.LoadFromFile(c.kubeconfig())
	if err != nil {
		return "", err
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{controllerUser: {ClientCertificateData: certPEM, ClientKeyData: keyPEM}}
	for _, ctx := range cfg.Contexts {
		ctx.AuthInfo = controllerUser
	}
	path := filepath.Join(c.dir, "controller.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// signClientCert issues a client certificate for user in group, signed by
// the CA in pki (ca.crt, ca.key).
func signClientCert(pki, user, group string) (certPEM, keyPEM []byte, err error) {
	caCert, caKey, err := loadCA(pki)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: []string{group}},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("sign the certificate of %s: %w", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func loadCA(pki string) (*x509.Certificate, any, error) {
	certPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		return nil, nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("%s: ca.crt or ca.key is not PEM", pki)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s/ca.crt: %w", pki, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		if key, err = x509.ParsePKCS1PrivateKey(kb.Bytes); err != nil {
			return nil, nil, fmt.Errorf("%s/ca.key: %w", pki, err)
		}
	}
	return cert, key, nil
}

// restConfig loads a kubeconfig with client-side rate limiting as given
// (a negative qps turns it off, as the controller's --kube-api-qps does).
func restConfig(path string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}
