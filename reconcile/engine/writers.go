package engine

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// writers keeps one impersonating client per ServiceAccount, so every
// apply, prune, hook step and finalize delete of a parent, and every live
// read of a member the cache does not hold, is bounded by that account's
// RBAC.
type writers struct {
	mu      sync.Mutex
	clients map[string]client.Client
}

// ErrNoIdentity is WriterFor's error for a parent that names no
// ServiceAccount when the controller has no default one and may not write
// as itself: the parent is Stalled (reason NoServiceAccount), never
// applied as the controller.
var ErrNoIdentity = errors.New("no ServiceAccount to write as: the parent sets no spec.serviceAccountName " +
	"(a published kind's instance: no annotation stencil.dev/service-account-name nor a default in its Bundle's spec.api), " +
	"and the controller has neither a default ServiceAccount (--default-service-account) nor --write-as-controller")

// WriterFor returns the client that writes a parent's members and reads
// them live: one impersonating system:serviceaccount:<ns>:<sa> (see
// ServiceAccount), or, only when the admin chose it
// (Options.WriteAsController) and the parent names no ServiceAccount, the
// manager's own. With neither it returns ErrNoIdentity.
func (e *Engine) WriterFor(comp applyset.Parent) (client.Client, error) {
	sa := ServiceAccount(comp, e.Options.DefaultServiceAccount)
	if sa == "" {
		if e.Options.WriteAsController {
			return e.Client, nil
		}
		return nil, ErrNoIdentity
	}
	user := ServiceAccountUser(comp.GetNamespace(), sa)
	w := &e.writers
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme, Mapper: e.Mapper})
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", user, err)
	}
	if w.clients == nil {
		w.clients = map[string]client.Client{}
	}
	w.clients[user] = c
	return c, nil
}

// LiveAs is a reader of the API server (never the cache) as writer: the
// impersonating client itself, or the engine's live reader when writer is
// the controller's own client.
func (e *Engine) LiveAs(writer client.Client) client.Reader {
	if writer == e.Client {
		return e.APIReader
	}
	return writer
}
