package authority

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// The controller writes only stencil's own admission objects: by name
// (RBAC resourceNames) the policy and the binding of Compositions, both
// PolicyName; a published kind's binding (KindBindingName) by the name
// the kind's ClusterRole grants (publish.ClusterRoles, printed by
// `stencil bundle rbac`). RBAC cannot limit create by name: the controller may
// create any binding, which can only make the API server refuse more,
// never less, and it creates only these.
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,resourceNames=stencil-access,verbs=update;patch
// +kubebuilder:rbac:groups="",namespace=stencil-system,resources=configmaps,verbs=get;list;watch;create;update;patch

// Keeper keeps stencil's admission objects as the controller of one shard
// needs them: the policy and the binding of Compositions (made by
// config/ too, so that no Composition is admitted before the controller
// first runs), the bindings of published kinds as their Bundles made them
// (see Kinds.Ensure) and, in the parameters, its shard's default
// ServiceAccount. It runs on the leader and acts again whenever the
// Watcher sees a change, so a deleted or edited object is made again.
type Keeper struct {
	// Client writes the objects (the controller's own client).
	Client client.Client
	// Reader reads them live (the manager's API reader).
	Reader client.Reader
	// Watcher holds them as the API server has them.
	Watcher *Watcher
	// Namespace is the controller's own, where the parameters are.
	Namespace string
	// Shard is the shard the controller serves, "" unsharded.
	Shard string
	// Account is the default ServiceAccount of the controller: "" when a
	// parent that names none is written as the controller itself, or
	// stalled.
	Account string
	// Margin is how long a new policy or binding may take to be applied
	// by every API server (engine.Options.AdmissionMargin).
	Margin time.Duration

	once  sync.Once
	ready chan struct{}
}

// Ready is closed once the shard's default ServiceAccount is published:
// from then on the API server admits the parents of this shard that name
// none (before, it refused them).
func (k *Keeper) Ready() <-chan struct{} {
	k.once.Do(func() { k.ready = make(chan struct{}) })
	return k.ready
}

// Start keeps the objects until ctx ends. A failure is logged and tried
// again.
func (k *Keeper) Start(ctx context.Context) error {
	k.Ready()
	changes := k.Watcher.Subscribe(ctx)
	if !k.Watcher.cache.WaitForCacheSync(ctx) {
		return nil
	}
	log := ctrl.LoggerFrom(ctx).WithName("admission-policy")
	published := false
	for {
		err := k.keep(ctx)
		if err != nil {
			log.Error(err, "keep stencil's admission policy")
		} else if !published {
			published = true
			close(k.ready)
		}
		retry := time.Minute
		if err != nil {
			retry = 5 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-time.After(retry):
		}
	}
}

// keep makes every object as it should be, writing only what differs.
func (k *Keeper) keep(ctx context.Context) error {
	created, since, err := k.keepPolicy(ctx)
	if err != nil {
		return err
	}
	if err := k.keepKindBindings(ctx); err != nil {
		return err
	}
	// A default published before the policy and its binding apply in
	// every API server would admit parents the API server did not check.
	if wait := time.Until(since.Add(k.Margin)); wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	return k.setParams(ctx, func(p Params, patch map[string]*string, now time.Time) {
		p.set(patch, DefaultKey(k.Shard), k.Account, now)
		// Once: a policy deleted and made again later does not move it,
		// so that no parent created in such a window is taken for an
		// earlier stencil's (see Parent.Legacy).
		if _, ok := p[InstalledKey]; !ok {
			patch[InstalledKey] = ptr.To(created.UTC().Format(time.RFC3339))
		}
	})
}

// keepPolicy applies the policy and the binding of Compositions when they
// are missing or differ, and returns the policy's creation time and the
// later of their creation times.
func (k *Keeper) keepPolicy(ctx context.Context) (created, since time.Time, err error) {
	cov, err := k.Watcher.Coverage(ctx, CompositionsResource)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if cov.Problem() != "" || cov.policy == nil || cov.binding == nil {
		if err := apply(ctx, k.Client, Policy()); err != nil {
			return time.Time{}, time.Time{}, err
		}
		if err := apply(ctx, k.Client, CompositionBinding(k.Namespace)); err != nil {
			return time.Time{}, time.Time{}, err
		}
	}
	for i, o := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		if err := k.Reader.Get(ctx, client.ObjectKey{Name: PolicyName}, o); err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("read %T %s: %w", o, PolicyName, err)
		}
		t := o.GetCreationTimestamp().Time
		if i == 0 {
			created = t
		}
		if t.After(since) {
			since = t
		}
	}
	return created, since, nil
}

// keepKindBindings applies again the bindings of published kinds that
// differ from what Kinds.Ensure made (edited by hand): the same objects,
// so the parents they admitted stay admitted.
func (k *Keeper) keepKindBindings(ctx context.Context) error {
	list := &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}
	if err := k.Watcher.cache.List(ctx, list); err != nil {
		return fmt.Errorf("list ValidatingAdmissionPolicyBindings: %w", err)
	}
	for i := range list.Items {
		b := &list.Items[i]
		kind := b.Annotations[AnnotationKind]
		if kind == "" || b.DeletionTimestamp != nil {
			continue
		}
		want := KindBinding(k.Namespace, schema.ParseGroupResource(kind))
		if want.Name != b.Name || (b.Spec.PolicyName == want.Spec.PolicyName && equality.Semantic.DeepEqual(b.Spec.ParamRef, want.Spec.ParamRef) &&
			sameMatch(b.Spec.MatchResources, want.Spec.MatchResources) && equality.Semantic.DeepEqual(b.Spec.ValidationActions, want.Spec.ValidationActions)) {
			continue
		}
		// A kind whose ClusterRole does not grant its binding by name
		// stays as it is, reported by the Watcher's coverage; the others
		// are kept.
		if err := apply(ctx, k.Client, want); err != nil {
			if apierrors.IsForbidden(err) {
				ctrl.LoggerFrom(ctx).Error(forbiddenBinding(err, schema.ParseGroupResource(kind)), "keep the binding of a published kind")
				continue
			}
			return err
		}
	}
	return nil
}

// apply server-side applies o under stencil's field manager, taking
// every field it sets.
func apply(ctx context.Context, c client.Client, o client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	delete(u.Object, "status")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// setParams changes the parameters: change fills patch (a nil value
// deletes a key) from the parameters as read live. The ConfigMap is made
// when missing. A merge patch, so each controller writes only its keys.
func (k *Keeper) setParams(ctx context.Context, change func(p Params, patch map[string]*string, now time.Time)) error {
	return setParams(ctx, k.Client, k.Reader, k.Namespace, change)
}

func setParams(ctx context.Context, c client.Client, r client.Reader, namespace string, change func(p Params, patch map[string]*string, now time.Time)) error {
	cm := &corev1.ConfigMap{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ParamsName}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read ConfigMap %s/%s: %w", namespace, ParamsName, err)
	}
	exists := err == nil
	patch := map[string]*string{}
	change(Params(cm.Data), patch, time.Now())
	if len(patch) == 0 {
		return nil
	}
	if !exists {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ParamsName, Labels: map[string]string{LabelManagedBy: "stencil"}}, Data: map[string]string{}}
		for key, v := range patch {
			if v != nil {
				cm.Data[key] = *v
			}
		}
		if err := c.Create(ctx, cm, client.FieldOwner(applyset.FieldManager)); err != nil {
			return fmt.Errorf("create ConfigMap %s/%s: %w", namespace, ParamsName, err)
		}
		return nil
	}
	// Over the version read: the keys were compared with what they held.
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": cm.ResourceVersion}, "data": patch})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, raw), client.FieldOwner(applyset.FieldManager)); err != nil {
		return fmt.Errorf("patch ConfigMap %s/%s: %w", namespace, ParamsName, err)
	}
	return nil
}
