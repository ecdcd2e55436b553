package reconcile

import (
	"context"
	"fmt"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/watch"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// LocalDecision is the controller's write-or-skip decision, for the
// differential tests of package reconcile_test: write reports whether
// stencil would send the apply of desired over live, changed the paths
// it found changed, asked whether it had to settle the answer with a
// server-side dry-run (see confirmer).
type LocalDecision func(ctx context.Context, desired, live *unstructured.Unstructured) (write bool, changed []string, asked bool)

// NewLocalDecision returns the decision the controller makes, typing
// custom kinds from the OpenAPI v3 of the cluster cfg connects to and
// sending its dry-runs through writer.
func NewLocalDecision(cfg *rest.Config, writer client.Client) (LocalDecision, error) {
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s, err := applyset.NewSchemas(disco.OpenAPIV3())
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, desired, live *unstructured.Unstructured) (bool, []string, bool) {
		d := s.Decide(ctx, writer, desired, live)
		return d.Write, d.Changed, d.Asked
	}, nil
}

// NewStandaloneReconciler returns a Composition reconciler on mgr whose
// controller is never started, for benchmarks that call Reconcile
// themselves: the watches it starts feed mgr's cache, and no worker of its
// own reconciles in the background.
func NewStandaloneReconciler(mgr ctrl.Manager, opts engine.Options) (*Controller, error) {
	e, err := engine.New(mgr, opts)
	if err != nil {
		return nil, err
	}
	r := newController(e, nil, e.Cache)
	c, err := controller.NewUnmanaged("composition-standalone", controller.Options{Reconciler: r, SkipNameValidation: ptr.To(true)})
	if err != nil {
		return nil, fmt.Errorf("build the standalone Composition controller: %w", err)
	}
	r.watches.Bind(c, handler.EnqueueRequestsFromMapFunc(r.triggers.MemberOf))
	return r, nil
}

// ForgetLastPass drops what the reconciler remembers of the Composition's
// last successful pass, so its next pass is a full one.
func (r *Controller) ForgetLastPass(name types.NamespacedName) { r.passes.Forget(name) }

// IndexMembers adds the member caches' part-of index to c for u's kind,
// as the controller does when it starts watching a kind.
var IndexMembers = watch.IndexMembers

// IndexPartOf is the name of that index, for client.MatchingFields.
const IndexPartOf = watch.IndexPartOf

// UseFIFOQueue makes the Composition controllers built until restore is
// called use controller-runtime's first come, first served work queue
// (fifo true) instead of the one that takes turns by namespace, for
// benchmarks that compare the two.
func UseFIFOQueue(fifo bool) (restore func()) {
	old := newQueue
	if fifo {
		newQueue = nil
	}
	return func() { newQueue = old }
}

// ReadParentsThrough makes r read its parents through wrap(r's parent
// cache), for tests of a cache that lags behind the API server.
func (r *Controller) ReadParentsThrough(wrap func(cache.Cache) cache.Cache) {
	r.parents = wrap(r.parents)
	r.triggers.Parents = r.parents
}
