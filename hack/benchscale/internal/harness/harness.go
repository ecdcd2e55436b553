package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/cluster"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/watch"
)

// Harness holds what the phases share.
type Harness struct {
	Options options.Options
	// Root is the stencil repository the run started in.
	Root string
	// Admin is the cluster's admin, with AdminRC its config (no
	// client-side rate limit).
	Admin   client.Client
	AdminRC *rest.Config
	// Watch follows the Compositions of fixture.NSBench and NSRoll and
	// the latency's Deployments.
	Watch *watch.Watcher
	// Ctrl are the controller's flags.
	Ctrl controller.Args
	// Audit and AuditUser count the controller's requests on the server
	// side; with no audit log (nil), its stencil_api_requests_total does.
	Audit     *requests.AuditLog
	AuditUser string
	// Plane reads the local cluster's CPU time; nil on an existing cluster.
	Plane *cluster.ControlPlane
	// Version is what the controller's binary says of itself; CountedBy
	// says how its requests are counted.
	Version, CountedBy string
}

// Open starts the local cluster (unless o.Kubeconfig names one), installs
// what the phases need and returns the Harness with a func that stops the
// cluster (it does nothing with -keep or an existing cluster). It must run
// from the root of the stencil repository.
func Open(ctx context.Context, o options.Options) (_ *Harness, closeCluster func(), err error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "local-cluster.sh")); err != nil {
		return nil, nil, fmt.Errorf("run from the root of the stencil repository: %w", err)
	}
	h := &Harness{Options: o, Root: root}
	h.Ctrl = controller.Args{Binary: o.Stencil, Kubeconfig: o.Kubeconfig, Concurrency: o.Concurrency,
		ApplyConcurrency: o.ApplyConcurrency, QPS: float32(o.QPS), Burst: o.Burst}
	if o.HeapProfile != "" || o.CPUProfile != "" {
		if h.Ctrl.PProf, err = controller.FreeAddr(); err != nil {
			return nil, nil, err
		}
	}
	closeCluster = func() {}
	adminKubeconfig := o.Kubeconfig
	if o.Kubeconfig == "" {
		cl := cluster.Local{Root: root, Dir: filepath.Join(root, ".local", "bench-cluster")}
		if err := cl.Up(); err != nil {
			return nil, nil, err
		}
		if !o.Keep {
			closeCluster = func() { _ = cl.Down() }
		}
		defer func() {
			if err != nil {
				closeCluster()
			}
		}()
		adminKubeconfig = cl.Kubeconfig()
		if err := h.useLocal(cl); err != nil {
			return nil, nil, err
		}
	} else if err := h.useExisting(); err != nil {
		return nil, nil, err
	}
	h.CountedBy = "the controller's stencil_api_requests_total (client side)"
	if h.Audit != nil {
		h.CountedBy = fmt.Sprintf("the API server's audit log, user %s", h.AuditUser)
	}
	if out, err := exec.CommandContext(ctx, o.Stencil, "version").Output(); err == nil {
		h.Version = strings.TrimSpace(string(out))
	}
	if h.AdminRC, err = cluster.RESTConfig(adminKubeconfig, -1, 0); err != nil {
		return nil, nil, err
	}
	if err := h.setup(ctx, adminKubeconfig); err != nil {
		return nil, nil, err
	}
	return h, closeCluster, nil
}

// useLocal points the controller at the local cluster cl as a user of its
// own, counted in cl's audit log.
func (h *Harness) useLocal(cl cluster.Local) error {
	var err error
	if h.Ctrl.Kubeconfig, err = cl.ControllerKubeconfig(); err != nil {
		return err
	}
	a := cl.Audit()
	h.Audit, h.AuditUser = &a, cluster.ControllerUser
	h.Ctrl.LogDir = filepath.Join(cl.Dir, "logs")
	h.Plane = cl.ControlPlane()
	if h.Options.Webhook {
		if h.Ctrl.Webhook, err = controller.WebhookArgs(cl.Dir); err != nil {
			return err
		}
	}
	return nil
}

// useExisting points the controller at -kubeconfig's cluster
// (-controller-kubeconfig's user), counted in -audit-log when given.
func (h *Harness) useExisting() error {
	o := h.Options
	if o.ControllerKubeconfig != "" {
		h.Ctrl.Kubeconfig = o.ControllerKubeconfig
	}
	if o.AuditLog != "" {
		h.Audit, h.AuditUser = &requests.AuditLog{Path: o.AuditLog}, o.AuditUser
	}
	var err error
	h.Ctrl.LogDir, err = os.MkdirTemp("", "benchscale-")
	return err
}
