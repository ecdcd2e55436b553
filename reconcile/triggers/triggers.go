package triggers

import (
	"context"
	"maps"

	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// Field indexes of the parents' caches.
const (
	// IndexBundle indexes Compositions by spec.bundle.
	IndexBundle = "spec.bundle"
	// IndexApplySetID indexes parents by their ApplySet id.
	IndexApplySetID = "applyset.id"
)

// Triggers maps events to the requests of the parents one controller
// serves: the Composition controller's, or one published kind's.
type Triggers struct {
	// Parents is the cache the parents are read from.
	Parents cache.Cache
	// Kind is the published kind served, nil for Compositions.
	Kind *engine.Kind
	// Engine places a parent in its Bundle's rollout (canary, order).
	Engine *engine.Engine
	// Fetch reads a parent, with its effective spec, from Parents; nil
	// and no error when it is not the controller's to reconcile.
	Fetch func(ctx context.Context, key types.NamespacedName) (applyset.Parent, error)
}

// kindName is the kind of the parents t serves, as rollout keys name it.
func (t *Triggers) kindName() string {
	if t.Kind != nil {
		return t.Kind.GVK.GroupKind().String()
	}
	return v1alpha1.GroupVersion.WithKind("Composition").GroupKind().String()
}

// List lists the parents t serves, from its cache, as requests.
func (t *Triggers) List(ctx context.Context, opts ...client.ListOption) ([]ctrlreconcile.Request, error) {
	var list client.ObjectList = &v1alpha1.CompositionList{}
	if t.Kind != nil {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(t.Kind.GVK.GroupVersion().WithKind(t.Kind.GVK.Kind + "List"))
		list = u
	}
	if err := t.Parents.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var out []ctrlreconcile.Request
	err := meta.EachListItem(list, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out = append(out, ctrlreconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		return nil
	})
	return out, err
}

// MemberOf maps a member to the parent whose ApplySet id it carries,
// through the shard-selected cache: a member of another shard maps to nothing.
func (t *Triggers) MemberOf(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	id := o.GetLabels()[applyset.LabelPartOf]
	if id == "" {
		return nil
	}
	reqs, err := t.List(ctx, client.MatchingFields{IndexApplySetID: id})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents by ApplySet id", "id", id)
	}
	return reqs
}

// OfBundle maps a Bundle to the parents that render it: the
// Compositions that name it, or every instance of the kind it publishes.
func (t *Triggers) OfBundle(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	var opts []client.ListOption
	switch {
	case t.Kind == nil:
		opts = append(opts, client.MatchingFields{IndexBundle: o.GetName()})
	case t.Kind.Bundle != o.GetName():
		return nil
	}
	reqs, err := t.List(ctx, opts...)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents by Bundle", "bundle", o.GetName())
	}
	return reqs
}

// All maps any event to every parent t serves (a change of the served
// APIs, or of stencil's admission policy).
func (t *Triggers) All(ctx context.Context, _ client.Object) []ctrlreconcile.Request {
	reqs, err := t.List(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents after the served APIs changed")
	}
	return reqs
}

// InNamespace maps a Namespace to the parents t serves in it: a
// change of its labels may change whether their Bundle's
// spec.namespaceSelector selects it (the pass stalls a parent its Bundle does not allow there).
func (t *Triggers) InNamespace(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	reqs, err := t.List(ctx, client.InNamespace(o.GetName()))
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents in a namespace", "namespace", o.GetName())
	}
	return reqs
}

// LabelsChanged passes the updates of an object that change its labels.
func LabelsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}

// BundleEvents maps a Bundle's events to the parents t serves that render
// it. An update that changes only the Bundle's rollouts (the rollout
// controller's status writes: as waves start and as parents are counted)
// brings a pass only of the parents whose place in it changed
// (rollout.Placement): a wave moves its own parents, not the Bundle's
// thousand others.
func (t *Triggers) BundleEvents() handler.EventHandler {
	all := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
		for _, req := range t.OfBundle(ctx, o) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			old, cur := e.ObjectOld.(*v1alpha1.Bundle), e.ObjectNew.(*v1alpha1.Bundle)
			for _, req := range t.OfBundle(ctx, cur) {
				if !rolloutOnly(old, cur) || t.placementChanged(ctx, old, cur, req) {
					q.Add(req)
				}
			}
		},
	}
}

// rolloutOnly reports whether a Bundle changed from old to cur in its
// status.rollouts alone.
func rolloutOnly(old, cur *v1alpha1.Bundle) bool {
	if old.Generation != cur.Generation || !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) {
		return false
	}
	a, b := old.Status, cur.Status
	a.Rollouts, b.Rollouts = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// placementChanged reports whether the parent req names has another place
// in cur's rollout than in old's.
func (t *Triggers) placementChanged(ctx context.Context, old, cur *v1alpha1.Bundle, req ctrlreconcile.Request) bool {
	key := rollout.Key{Kind: t.kindName(), Namespace: req.Namespace, Name: req.Name}
	canary := false
	if cur.Spec.Rollout != nil && cur.Spec.Rollout.Canary != nil {
		p, err := t.Fetch(ctx, req.NamespacedName)
		if err != nil || p == nil {
			return true
		}
		canary = t.Engine.Canary(ctx, cur, p)
	}
	var order rollout.Order
	if rollout.Ranked(old, t.Engine.Options.Shard) || rollout.Ranked(cur, t.Engine.Options.Shard) {
		var err error
		if order, err = t.Engine.Order.Order(ctx); err != nil {
			return true // the pass reports it
		}
	}
	return rollout.Placement(old, order, t.Engine.Options.Shard, key, canary) != rollout.Placement(cur, order, t.Engine.Options.Shard, key, canary)
}

// ParentPredicates pass the changes of a parent that may change what a pass
// does: its spec (generation), its deletion, and its labels and annotations.
func ParentPredicates() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, engine.DeletingPredicate(), metadataChangedPredicate())
}

// ownLabels and ownAnnotations are the metadata stencil itself writes on a
// Composition (see package parent): a change of them alone brings no pass, so
// stencil's own writes do not bring another pass.
var (
	ownLabels      = []string{applyset.LabelApplySetID}
	ownAnnotations = []string{applyset.AnnotationTooling, applyset.AnnotationGroupKinds, applyset.AnnotationNamespaces}
)

// metadataChangedPredicate passes updates that change a label or an
// annotation, other than those stencil writes itself: templates read them
// (.Composition.Labels, .Composition.Annotations), and annotations such as
// stencil.dev/allow-empty-render change what a pass does.
func metadataChangedPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(without(e.ObjectOld.GetLabels(), ownLabels), without(e.ObjectNew.GetLabels(), ownLabels)) ||
			!maps.Equal(without(e.ObjectOld.GetAnnotations(), ownAnnotations), without(e.ObjectNew.GetAnnotations(), ownAnnotations))
	}}
}

// without returns m without the keys.
func without(m map[string]string, keys []string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
