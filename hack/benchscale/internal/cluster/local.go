package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// ControllerUser is the user the controller authenticates as on the
// local cluster, so the audit log tells its requests from the harness's.
const ControllerUser = "stencil-bench-controller"

// kcmControllers are kube-controller-manager's controllers on the bench
// cluster: all but those that answer Services (nothing the benchmark
// measures reads Endpoints or EndpointSlices).
const kcmControllers = "*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller"

// Local is hack/local-cluster.sh's cluster, with its audit log on.
type Local struct {
	// Root is the stencil repository; Dir the cluster's folder
	// (STENCIL_CLUSTER_DIR).
	Root, Dir string
	// Nodes is how many kwok nodes to make; the script's default when 0.
	Nodes int
}

func (c Local) script(verb string) error {
	cmd := exec.Command(filepath.Join(c.Root, "hack", "local-cluster.sh"), verb)
	// Every Service of the floor and of the controller takes a cluster
	// IP: a /16 holds 65,534 of them. The endpoints controllers write an
	// Endpoints and an EndpointSlice for every Service, and delete them
	// with it, behind the Services' creation by seconds: the floor's
	// would be written, and deleted, during the cold converge (1,540
	// of the 10,500 requests in its window in one run), which measures
	// neither.
	cmd.Env = append(os.Environ(), "STENCIL_CLUSTER_DIR="+c.Dir, "STENCIL_AUDIT=1", "STENCIL_SERVICE_CIDR=10.0.0.0/16",
		"STENCIL_KCM_CONTROLLERS="+kcmControllers)
	if c.Nodes > 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("STENCIL_NODES=%d", c.Nodes))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/local-cluster.sh %s: %w", verb, err)
	}
	return nil
}

// Up starts the cluster (stopping one the folder holds first).
func (c Local) Up() error { return c.script("up") }

// Down stops it.
func (c Local) Down() error { return c.script("down") }

// Kubeconfig is the admin's kubeconfig.
func (c Local) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

// Audit is the API server's audit log.
func (c Local) Audit() requests.AuditLog {
	return requests.AuditLog{Path: filepath.Join(c.Dir, "audit.log")}
}

// ControlPlane reads the CPU time of the cluster's processes.
func (c Local) ControlPlane() *ControlPlane {
	return &ControlPlane{PIDDir: filepath.Join(c.Dir, "pids")}
}

// ControllerKubeconfig writes a kubeconfig for the admin's cluster whose
// user is a client certificate of its own, signed by the cluster's CA,
// for ControllerUser in system:masters. It returns the file's path.
func (c Local) ControllerKubeconfig() (string, error) {
	certPEM, keyPEM, err := signClientCert(filepath.Join(c.Dir, "pki"), ControllerUser, "system:masters")
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig())
	if err != nil {
		return "", err
	}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{ControllerUser: {ClientCertificateData: certPEM, ClientKeyData: keyPEM}}
	for _, ctx := range cfg.Contexts {
		ctx.AuthInfo = ControllerUser
	}
	path := filepath.Join(c.Dir, "controller.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig loads a kubeconfig with client-side rate limiting as given
// (a negative qps turns it off, as the controller's --kube-api-qps does).
func RESTConfig(path string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	return cfg, nil
}
