package reconcile

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// writerCache keeps one impersonating client per ServiceAccount, so every
// apply, prune, hook step and finalize delete of a parent, and every live
// read of a member the cache does not hold, is bounded by that account's
// RBAC.
type writerCache struct {
	mu      sync.Mutex
	clients map[string]client.Client
}

// errNoIdentity is writerFor's error for a parent that names no
// ServiceAccount when the controller has no default one and may not write
// as itself: the parent is Stalled (reason NoServiceAccount), never
// applied as the controller.
var errNoIdentity = errors.New("no ServiceAccount to write as: the parent sets no spec.serviceAccountName " +
	"(a published kind's instance: no annotation stencil.dev/service-account-name nor a default in its Bundle's spec.api), " +
	"and the controller has neither a default ServiceAccount (--default-service-account) nor --write-as-controller")

// serviceAccount returns the account a parent's writes impersonate: its
// spec.serviceAccountName, else def (the controller's default, "" when
// the controller writes as itself, see Options.WriteAsController).
func serviceAccount(comp applyset.Parent, def string) string {
	if comp.ParentSpec().ServiceAccountName != "" {
		return comp.ParentSpec().ServiceAccountName
	}
	return def
}

// writerFor returns the client that writes a parent's members and reads
// them live: one impersonating system:serviceaccount:<ns>:<sa> (see
// serviceAccount), or, only when the admin chose it
// (Options.WriteAsController) and the parent names no ServiceAccount, the
// manager's own. With neither it returns errNoIdentity.
func (w *writerCache) writerFor(r *CompositionReconciler, comp applyset.Parent) (client.Client, error) {
	sa := serviceAccount(comp, r.Options.DefaultServiceAccount)
	if sa == "" {
		if r.Options.WriteAsController {
			return r.Client, nil
		}
		return nil, errNoIdentity
	}
	user := ServiceAccountUser(comp.GetNamespace(), sa)
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

// ServiceAccountUser is the user name of ServiceAccount name of namespace ns.
func ServiceAccountUser(ns, name string) string {
	return "system:serviceaccount:" + ns + ":" + name
}

// EffectiveServiceAccount returns the ServiceAccount of its namespace that
// parent's writes impersonate, and ok false when they are the controller's
// own (Options.WriteAsController and no ServiceAccount named) or nobody's
// (no ServiceAccount at all: the parent is Stalled). The admission webhook
// checks that the requester may use it.
func (o Options) EffectiveServiceAccount(parent applyset.Parent) (string, bool) {
	sa := serviceAccount(parent, o.DefaultServiceAccount)
	return sa, sa != ""
}

// liveAs is a reader of the API server (never the cache) as writer: the
// impersonating client itself, or live (the controller's live reader)
// when writer is own, the controller's own client.
func liveAs(writer, own client.Client, live client.Reader) client.Reader {
	if writer == own {
		return live
	}
	return writer
}
