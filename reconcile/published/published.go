package published

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/templates"
)

// BundleReconciler reports whether each Bundle loads and parses, and its
// revision; for a Bundle that publishes a kind (spec.api) it keeps the
// kind's CRD and has the kind served (see publishKind).
type BundleReconciler struct {
	// Client is the manager's client.
	Client client.Client
	// APIReader reads from the API server, bypassing the cache.
	APIReader client.Reader
	bundles   BundleLoader
	// groups says which API groups something other than CRDs serves.
	groups GroupServer
	kinds  *Kinds
	// puller pulls the charts of Bundles with a source (see
	// resolveSource).
	puller *pull.Puller
	// admission keeps the check of the published kinds' instances (see
	// claim); margin is how long a new binding takes to apply everywhere.
	admission *authority.Kinds
	margin    time.Duration
	// conversion is where the conversion webhook is served (see
	// withConversion).
	conversion Conversion
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
			r.stop(ctx, req.Name, schema.GroupVersionKind{}, schema.GroupResource{})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.unpublish(ctx, b)
	}
	st := *b.Status.DeepCopy()
	st.ObservedGeneration = b.Generation
	var res ctrl.Result
	if b.Spec.Source != nil {
		res.RequeueAfter = r.resolveSource(ctx, b, &st)
	} else {
		st.Source = nil
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionSourceReady)
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady, Message: "bundle loads and its templates parse", ObservedGeneration: b.Generation}
	reason := v1alpha1.ReasonRenderFailed
	sourced, err := r.sourced(ctx, b, &st)
	var loaded *templates.Bundle
	if err != nil {
		reason = sourceFailure(err, st)
		if res.RequeueAfter == 0 || res.RequeueAfter > maxRetry {
			res.RequeueAfter = maxRetry
		}
	} else {
		loaded, err = r.bundles.LoadBundle(sourced)
	}
	if err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, reason, err.Error()
		st.Revision = ""
	} else {
		st.Revision = loaded.Revision()
		var published publication
		var pres ctrl.Result
		if published, pres, err = r.publishKind(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
		if pres.RequeueAfter > 0 && (res.RequeueAfter == 0 || pres.RequeueAfter < res.RequeueAfter) {
			res.RequeueAfter = pres.RequeueAfter
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
	// Over the Bundle as read: the rollout controllers write its
	// status.rollouts, and a merge patch replaces lists whole.
	if err := r.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("patch status of Bundle %s: %w", b.Name, err)
	}
	return res, nil
}

// publication is what publishKind found: a reason when the Bundle's kind
// is not served (its Ready=False), and a message either way.
type publication struct {
	reason, message string
	// wait, when not zero, is when to look again.
	wait time.Duration
}

// publishKind keeps the CRD of the kind b publishes and has the kind served:
//
//  1. A Bundle that publishes nothing has no kind served for it; a kind it
//     published before keeps its CRD, its instances and their children.
//  2. The CRD is built and checked as the API server would (publish.CRD);
//     one that is refused (a schema that is not structural, say) touches
//     nothing: a CRD applied before, and its kind's controller, stay.
//  3. A kind of several versions converts through stencil's conversion
//     webhook: the CRD is sent where the webhook configuration's base
//     entry is (withConversion); with no webhook server, or no such
//     entry, b is ConversionUnavailable and nothing is touched, as in 2.
//  4. The CRD is kept only if b made it (see keepCRD): it is created only
//     if absent, never taken over. A CRD of that name not labelled for b
//     (made by hand, another Bundle's, an orphan of a deleted Bundle of
//     another name), or a group Kubernetes, the API server or an
//     aggregated API server serves, is a KindConflict: the CRD is not
//     touched and the kind is not served by b (a controller b ran for it
//     stops).
//  5. The Bundle carries BundleFinalizer when api.deletionPolicy is Delete.
//  6. Names the API server refuses (NamesAccepted=False, another CRD
//     serves the kind) are a KindConflict too; until the CRD is
//     Established the kind waits (the CRD's own change brings the next
//     pass).
//  7. The controller must be allowed to get, list, watch, update and patch
//     the kind and patch its status (an aggregated ClusterRole, see
//     `stencil bundle rbac`); else Forbidden, looked at again after
//     engine.ForbiddenRecheck.
//  8. The kind's controller is started (see Kinds), and any
//     other kind b published before stops being served.
func (r *BundleReconciler) publishKind(ctx context.Context, b *v1alpha1.Bundle) (publication, ctrl.Result, error) {
	if b.Spec.API == nil {
		r.stop(ctx, b.Name, schema.GroupVersionKind{}, schema.GroupResource{})
		return publication{}, ctrl.Result{}, r.setFinalizer(ctx, b, false)
	}
	api := publish.Defaulted(*b.Spec.API)
	what := kindName(api)
	crd, err := publish.CRD(b.Name, b.Spec)
	if err != nil {
		var perr *publish.Error
		if errors.As(err, &perr) {
			return publication{reason: perr.Reason, message: what + " is not published: " + perr.Error()}, ctrl.Result{}, nil
		}
		return publication{reason: v1alpha1.ReasonInvalidAPI, message: what + " is not published: " + err.Error()}, ctrl.Result{}, nil
	}
	if p, err := r.withConversion(ctx, crd, what); err != nil || p.reason != "" {
		return p, ctrl.Result{}, err
	}
	if p, err := r.keepCRD(ctx, b, crd, what, api.DeletionPolicy == v1alpha1.DeletionPolicyDelete); err != nil || p.reason != "" {
		return p, ctrl.Result{RequeueAfter: p.wait}, err
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
		return publication{}, ctrl.Result{}, fmt.Errorf("read CustomResourceDefinition %s: %w", crd.Name, err)
	}
	if live.Labels[publish.LabelBundle] != b.Name {
		return r.conflict(ctx, b, fmt.Sprintf("%s is not published: CustomResourceDefinition %s is no longer kept for this Bundle", what, crd.Name)), ctrl.Result{}, nil
	}
	if c := crdCondition(live, apiextensionsv1.NamesAccepted); c != nil && c.Status == apiextensionsv1.ConditionFalse {
		return r.conflict(ctx, b, fmt.Sprintf("%s is not published: CustomResourceDefinition %s: %s", what, crd.Name, c.Message)), ctrl.Result{}, nil
	}
	if c := crdCondition(live, apiextensionsv1.Established); c == nil || c.Status != apiextensionsv1.ConditionTrue {
		return publication{reason: v1alpha1.ReasonEstablishing, message: fmt.Sprintf("waiting for CustomResourceDefinition %s to be Established", crd.Name)}, ctrl.Result{}, nil
	}
	if missing, err := r.mayServe(ctx, api); err != nil || missing != "" {
		if err != nil {
			return publication{}, ctrl.Result{}, err
		}
		return publication{reason: v1alpha1.ReasonForbidden, message: fmt.Sprintf("%s is not served: the controller may not %s; grant it with a ClusterRole labelled rbac.stencil.dev/aggregate-to-manager: \"true\" (`stencil bundle rbac` prints one)", what, missing)},
			ctrl.Result{RequeueAfter: engine.ForbiddenRecheck}, nil
	}
	gvk := publish.GVK(api)
	r.stop(ctx, b.Name, gvk, schema.GroupResource{Group: api.Group, Resource: api.Plural})
	if err := r.kinds.serve(ctx, engine.Kind{GVK: gvk, Bundle: b.Name, Resource: api.Plural}); err != nil {
		return publication{}, ctrl.Result{}, fmt.Errorf("serve %s: %w", what, err)
	}
	return publication{message: "publishes " + what}, ctrl.Result{}, nil
}

// kindName names a published kind in messages: "AppService.app.example.com/v1".
func kindName(api v1alpha1.BundleAPI) string {
	return api.Kind + "." + api.Group + "/" + api.Version
}

// applyCRD server-side applies the CRD over live, which keepCRD found
// labelled for this Bundle: the API server refuses the apply (a
// conflict, retried) if the CRD changed since (its resourceVersion), so
// a CRD that stopped being this Bundle's is never written. Its
// conversion path, if any, keeps live's token (withToken). An API server
// that refuses it as invalid gives a publication refused with reason
// InvalidAPI, without the values it quotes.
func (r *BundleReconciler) applyCRD(ctx context.Context, crd, live *apiextensionsv1.CustomResourceDefinition, what string) (publication, error) {
	if err := withToken(crd, live); err != nil {
		return publication{}, err
	}
	rv := live.ResourceVersion
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return publication{}, fmt.Errorf("apply CustomResourceDefinition %s: %w", crd.Name, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	u.SetResourceVersion(rv)
	err = r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership)
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return publication{reason: v1alpha1.ReasonInvalidAPI, message: fmt.Sprintf("%s is not published: CustomResourceDefinition %s: %v", what, crd.Name, applyset.Scrub(err))}, nil
	case err != nil:
		return publication{}, fmt.Errorf("apply CustomResourceDefinition %s: %w", crd.Name, err)
	}
	return publication{}, nil
}

// crdCondition returns the CRD's condition of type t, or nil.
func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// mayServe asks the API server whether the controller may serve api's
// kind: get, list, watch, update and patch it, and patch its status. It
// returns the first missing permission as "verb resource", or "".
func (r *BundleReconciler) mayServe(ctx context.Context, api v1alpha1.BundleAPI) (string, error) {
	for _, need := range []struct{ verb, sub string }{
		{"get", ""}, {"list", ""}, {"watch", ""}, {"update", ""}, {"patch", ""}, {"patch", "status"},
	} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: need.verb, Group: api.Group, Resource: api.Plural, Subresource: need.sub},
		}}
		if err := r.Client.Create(ctx, review); err != nil {
			return "", fmt.Errorf("review access to %s %s.%s: %w", need.verb, api.Plural, api.Group, err)
		}
		if !review.Status.Allowed {
			res := api.Plural + "." + api.Group
			if need.sub != "" {
				res += "/" + need.sub
			}
			return need.verb + " " + res, nil
		}
	}
	return "", nil
}

// setFinalizer adds or removes BundleFinalizer.
func (r *BundleReconciler) setFinalizer(ctx context.Context, b *v1alpha1.Bundle, want bool) error {
	if controllerutil.ContainsFinalizer(b, BundleFinalizer) == want {
		return nil
	}
	orig := b.DeepCopy()
	if want {
		controllerutil.AddFinalizer(b, BundleFinalizer)
	} else {
		controllerutil.RemoveFinalizer(b, BundleFinalizer)
	}
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("update the finalizers of Bundle %s: %w", b.Name, err)
	}
	return nil
}

// unpublish handles a Bundle being deleted. Its kind's CRD is deleted only
// when api.deletionPolicy is Delete (the finalizer is there): the API
// server then deletes every instance, which the kind's controller, still
// serving it, finalizes as it would any parent (their children deleted or
// orphaned by their own deletion policy); once the CRD is gone the kind
// stops being served and the finalizer is dropped. Otherwise the kind
// stops being served and the CRD, its instances and their children stay.
func (r *BundleReconciler) unpublish(ctx context.Context, b *v1alpha1.Bundle) (ctrl.Result, error) {
	if controllerutil.ContainsFinalizer(b, BundleFinalizer) && b.Spec.API != nil {
		api := publish.Defaulted(*b.Spec.API)
		live := &apiextensionsv1.CustomResourceDefinition{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: publish.CRDName(api)}, live)
		switch {
		case apierrors.IsNotFound(err):
			// Gone, and every instance with it: so is what checked them.
			if err := r.admission.Forget(ctx, schema.GroupResource{Group: api.Group, Resource: api.Plural}, b.Name); err != nil {
				return ctrl.Result{}, fmt.Errorf("forget %s in stencil's admission policy: %w", kindName(api), err)
			}
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("read CustomResourceDefinition %s: %w", publish.CRDName(api), err)
		case live.Labels[publish.LabelBundle] == b.Name:
			if live.DeletionTimestamp.IsZero() {
				uid := live.UID
				if err := r.Client.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
					return ctrl.Result{}, fmt.Errorf("delete CustomResourceDefinition %s: %w", live.Name, err)
				}
			}
			// The instances are finalized by the kind's controller: it
			// must serve them until the CRD is gone (its deletion brings
			// the next pass).
			if err := r.kinds.serve(ctx, engine.Kind{GVK: publish.GVK(api), Bundle: b.Name, Resource: api.Plural}); err != nil {
				return ctrl.Result{}, fmt.Errorf("serve %s: %w", kindName(api), err)
			}
			return ctrl.Result{}, nil
		}
	}
	r.stop(ctx, b.Name, schema.GroupVersionKind{}, schema.GroupResource{})
	return ctrl.Result{}, r.setFinalizer(ctx, b, false)
}

// SetupWithManager registers the Bundle controller on e's manager, which
// shares the engine's bundle cache and chart puller, and the controllers
// of the published kinds, which serve reaches (reconcile.ServeKind). It
// watches the CRDs stencil keeps for Bundles and, when conv is enabled,
// the webhook configuration the conversion webhook is sent as (see
// Conversion), and returns the kinds served.
func SetupWithManager(mgr ctrl.Manager, e *engine.Engine, serve ServeFunc, conv Conversion) (*Kinds, error) {
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	kinds := newKindControllers(serve)
	if err := mgr.Add(kinds); err != nil {
		return nil, fmt.Errorf("add the published kinds' controllers: %w", err)
	}
	b := &BundleReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), bundles: e, kinds: kinds, puller: e.Sources,
		groups: cluster.NewAPIs(mgr.GetRESTMapper(), mgr.GetAPIReader()), admission: e.AdmissionKinds(), margin: e.Options.AdmissionMargin,
		conversion: conv}
	allBundles := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []ctrlreconcile.Request {
		list := &v1alpha1.BundleList{}
		if err := mgr.GetClient().List(ctx, list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list Bundles after stencil's admission policy changed")
			return nil
		}
		var reqs []ctrlreconcile.Request
		for _, o := range list.Items {
			if o.Spec.API != nil {
				reqs = append(reqs, ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: o.Name}})
			}
		}
		return reqs
	})
	bld := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Bundle{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, engine.DeletingPredicate()))).
		WatchesRawSource(publishedCRDs(md)).
		// A binding or the parameters deleted or changed: made again.
		WatchesRawSource(source.Channel(e.Authority.Subscribe(context.Background()), allBundles))
	if conv.Enabled {
		bld = bld.WatchesRawSource(conversionConfigSource(md, conv, mgr.GetClient()))
	}
	if ns := e.Options.Namespace; ns != "" {
		bld = bld.WatchesRawSource(sourceSecrets(md, ns, mgr.GetClient()))
	}
	if err := bld.Named("bundle").Complete(b); err != nil {
		return nil, err
	}
	return kinds, nil
}

// BundleLoader loads Bundles, once per generation.
type BundleLoader interface {
	LoadBundle(b *v1alpha1.Bundle) (*templates.Bundle, error)
}

// publishedCRDs is a source of the Bundles whose kind's CRD changed: a
// metadata watch of the CRDs labelled publish.LabelBundle.
func publishedCRDs(md metadata.Interface) source.Source {
	return cluster.MetadataSource(md, apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
		"the published kinds' CustomResourceDefinitions",
		func(o *metav1.ListOptions) { o.LabelSelector = publish.LabelBundle },
		func(q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], m metav1.Object) {
			if name := m.GetLabels()[publish.LabelBundle]; name != "" {
				q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
		})
}
