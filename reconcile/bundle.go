package reconcile

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// bundleCache keeps each Bundle loaded (parsed) once per generation, so
// reconciling many Compositions of one Bundle parses its templates once.
type bundleCache struct {
	mu      sync.Mutex
	entries map[types.UID]bundleEntry
}

type bundleEntry struct {
	generation int64
	bundle     *templates.Bundle
	err        error
}

// load returns the parsed bundle, from the cache when its generation is known.
func (c *bundleCache) load(b *v1alpha1.Bundle) (*templates.Bundle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[b.UID]; ok && e.generation == b.Generation {
		cacheLookup(cacheBundle, true)
		return e.bundle, e.err
	}
	cacheLookup(cacheBundle, false)
	loaded, err := templates.LoadObject(b)
	if c.entries == nil {
		c.entries = map[types.UID]bundleEntry{}
	}
	c.entries[b.UID] = bundleEntry{generation: b.Generation, bundle: loaded, err: err}
	return loaded, err
}

// BundleReconciler reports whether each Bundle loads and parses, and its
// revision; for a Bundle that publishes a kind (spec.api) it keeps the
// kind's CRD and has the kind served (see publishKind).
type BundleReconciler struct {
	// Client is the manager's client.
	Client client.Client
	// APIReader reads from the API server, bypassing the cache.
	APIReader client.Reader
	bundles   *bundleCache
	kinds     *kindControllers
}

// BundleFinalizer keeps a Bundle whose api.deletionPolicy is Delete until
// the CRD of its kind, and so every instance, is deleted.
const BundleFinalizer = "stencil.dev/published-kind"

// Reconcile loads the Bundle, publishes its kind, and writes its status:
// revision, and Ready with the file and line of the first problem when it
// does not load, or why its kind is not served.
func (r *BundleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.kinds.stopBundle(req.Name, schema.GroupVersionKind{})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.unpublish(ctx, b)
	}
	st := *b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	loaded, err := r.bundles.load(b)
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, Message: "bundle loads and its templates parse", ObservedGeneration: b.Generation}
	var res ctrl.Result
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, err.Error()
		st.Revision = ""
	} else {
		st.Revision = loaded.Revision()
		var published publication
		if published, res, err = r.publishKind(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
		if published.reason != "" {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, published.reason, published.message
		} else if published.message != "" {
			cond.Message += "; " + published.message
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if equality.Semantic.DeepEqual(b.Status, st) {
		return res, nil
	}
	orig := b.DeepCopy()
	b.Status = st
	if err := r.Client.Status().Patch(ctx, b, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("patch status of Bundle %s: %w", b.Name, err)
	}
	return res, nil
}
