package reconcile

import (
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// writerCache keeps one impersonating client per ServiceAccount, so every
// apply and prune of a Composition with a ServiceAccount is bounded by that
// account's RBAC.
type writerCache struct {
	mu      sync.Mutex
	clients map[string]client.Client
}

// serviceAccount returns the account a Composition's writes impersonate, or "".
func serviceAccount(comp applyset.Parent, def string) string {
	if comp.ParentSpec().ServiceAccountName != "" {
		return comp.ParentSpec().ServiceAccountName
	}
	return def
}

// writerFor returns the client that writes a Composition's members: the
// manager's own, or one impersonating system:serviceaccount:<ns>:<name>.
func (w *writerCache) writerFor(r *CompositionReconciler, comp applyset.Parent) (client.Client, error) {
	sa := serviceAccount(comp, r.Options.DefaultServiceAccount)
	if sa == "" {
		return r.Client, nil
	}
	user := "system:serviceaccount:" + comp.GetNamespace() + ":" + sa
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(r.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: r.Scheme, Mapper: r.Mapper})
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", user, err)
	}
	if w.clients == nil {
		w.clients = map[string]client.Client{}
	}
	w.clients[user] = c
	return c, nil
}
