package engine

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	chartsource "github.com/stencil-dev/stencil/source"
)

// Options configure the controllers.
type Options struct {
	// Version is stencil's version, written into the ApplySet tooling annotation.
	Version string
	// DefaultServiceAccount is the ServiceAccount, of each parent's own
	// namespace, that the writes of a parent naming none impersonate
	// (`stencil controller` sets "stencil"). Every member apply, prune,
	// hook step, finalize delete and live read of a member is made as
	// system:serviceaccount:<parent namespace>:<spec.serviceAccountName,
	// else this>, so the tenant's RBAC bounds what a parent can do.
	// Exclusive with WriteAsController.
	DefaultServiceAccount string
	// WriteAsController makes the writes of a parent that names no
	// ServiceAccount the controller's own, bounded only by the controller's
	// (aggregated, cluster-wide) RBAC: a cluster admin's explicit choice.
	// False, the zero value, with no DefaultServiceAccount, stalls such a
	// parent (reason NoServiceAccount) and writes nothing: the zero
	// Options never write as the controller.
	WriteAsController bool
	// MaxConcurrentReconciles bounds how many Compositions reconcile at once.
	MaxConcurrentReconciles int
	// ApplyConcurrency bounds how many objects of one stage are applied at once.
	ApplyConcurrency int
	// Shard, when set, is the shard this controller serves: it reconciles
	// only the Compositions labelled stencil.dev/shard=Shard, and an
	// unsharded controller only those without the label. The manager's
	// cache must be built with shard.CacheOptions(Shard).
	Shard string
	// Renderer renders bundles; required. The controller command hands
	// in a pool of worker processes (package internal/sandbox) that bounds
	// every render's time and memory, and stops it with the manager.
	Renderer plan.Renderer
	// EveryReplica keeps what the admission webhook reads (the served
	// APIs, for .Capabilities) up to date on every replica, not only the
	// leader: set it when the webhook is served (package admission).
	EveryReplica bool
	// Namespace is the controller's own namespace: the only one the
	// Secrets a Bundle's spec.source names are read from (package pull),
	// and where the parameters of stencil's admission policy are
	// (package authority). "" is DefaultNamespace.
	Namespace string
	// AdmissionMargin is how long a change of stencil's admission policy,
	// of a binding or of a default ServiceAccount may take to apply in
	// every API server (policies refresh every second; add clock skew
	// between the controller and the API servers): a parent created or
	// changed within it of such a change is not taken as checked by it.
	// Zero is DefaultAdmissionMargin.
	AdmissionMargin time.Duration
	// SourcePolicy is where the pulls of Bundles' spec.source may go
	// (package source): its zero value refuses loopback, private and
	// link-local addresses and redirects to other hosts; the cluster
	// admin widens it (--allow-private-registries,
	// --allow-source-redirects). A Bundle cannot.
	SourcePolicy chartsource.Policy
	// ReferenceQPS bounds the writes per second, over every parent, whose
	// only change is the parent's owner reference on a member that lacks
	// it: the one write per member an existing set meets when the
	// controller starts to write owner references (see
	// ownership.Pacer). Zero is DefaultReferenceQPS; negative, no bound.
	ReferenceQPS float32
	// Observer, when not nil, is told of every pass as it starts and
	// ends: for tests and benchmarks, which wait for a pass rather than
	// for its writes (a pass over a converged set writes nothing).
	Observer PassObserver
}

// PassObserver is told of the passes of the controllers' parents. Its
// methods are called on the controllers' workers, one pass of a parent at
// a time: they must be quick and safe for concurrent use.
type PassObserver interface {
	// PassStarted is called before a pass of parent key, of kind, reads
	// anything.
	PassStarted(kind schema.GroupKind, key types.NamespacedName)
	// PassEnded is called once that pass has written the parent's status,
	// with the pass's error.
	PassEnded(kind schema.GroupKind, key types.NamespacedName, err error)
}

// DefaultReferenceQPS is Options.ReferenceQPS's default: a set of
// 10,000 members gains its owner references within about 8 minutes.
const DefaultReferenceQPS = 20

// DefaultNamespace is Options.Namespace's default, the install's
// (config/).
const DefaultNamespace = "stencil-system"

// DefaultAdmissionMargin is Options.AdmissionMargin's default.
const DefaultAdmissionMargin = 10 * time.Second

// ForbiddenRecheck is how long a parent stalled with reason Forbidden
// waits before looking again: RBAC changes raise no event.
const ForbiddenRecheck = time.Minute

// ServiceAccount returns the account a parent's writes impersonate: its
// spec.serviceAccountName, else def (the controller's default, "" when
// the controller writes as itself, see Options.WriteAsController).
func ServiceAccount(comp applyset.Parent, def string) string {
	if comp.ParentSpec().ServiceAccountName != "" {
		return comp.ParentSpec().ServiceAccountName
	}
	return def
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
	sa := ServiceAccount(parent, o.DefaultServiceAccount)
	return sa, sa != ""
}
