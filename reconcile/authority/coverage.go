package authority

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// CompositionsResource is the resource of Compositions, the kind the
// binding CompositionBindingName checks.
var CompositionsResource = schema.GroupResource{Group: "stencil.dev", Resource: "compositions"}

// Watcher holds, in a cache of its own, what the API server checks
// parents with: the policy, stencil's bindings and the parameters. It
// runs on every replica (the webhook asks it too) and tells each
// subscriber when the check of its kind changes (SubscribeKind), or when
// anything changes (Subscribe).
type Watcher struct {
	cache     cache.Cache
	namespace string
	// ctx is Start's: reads for notices end with it.
	ctx context.Context

	mu   sync.Mutex
	subs map[chan event.GenericEvent]subscription
}

// subscription is what a subscriber follows: every change (all), or the
// check of kind, as last seen (seen).
type subscription struct {
	all  bool
	kind schema.GroupResource
	seen string
}

// NewWatcher returns a Watcher of the admission objects of the controller
// whose namespace is namespace (where the parameters are), reading with
// cfg. Add it to the manager, which starts it.
func NewWatcher(cfg *rest.Config, scheme *runtime.Scheme, namespace string) (*Watcher, error) {
	managed := labels.SelectorFromSet(labels.Set{LabelManagedBy: "stencil"})
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&admissionregistrationv1.ValidatingAdmissionPolicy{}: {Field: fields.OneTermEqualSelector("metadata.name", PolicyName)},
		// The bindings a cluster admin's config/ and the controller make
		// are labelled; one that is not is no binding of stencil's.
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}: {Label: managed},
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{namespace: {
			FieldSelector: fields.OneTermEqualSelector("metadata.name", ParamsName)}}},
	}})
	if err != nil {
		return nil, fmt.Errorf("cache of the admission policy: %w", err)
	}
	return &Watcher{cache: c, namespace: namespace}, nil
}

// Start runs the cache until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	notify := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { w.notify() },
		UpdateFunc: func(any, any) { w.notify() },
		DeleteFunc: func(any) { w.notify() },
	}
	for _, o := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &corev1.ConfigMap{}} {
		inf, err := w.cache.GetInformer(ctx, o)
		if err != nil {
			return fmt.Errorf("watch the admission policy: %w", err)
		}
		if _, err := inf.AddEventHandler(notify); err != nil {
			return fmt.Errorf("watch the admission policy: %w", err)
		}
	}
	return w.cache.Start(ctx)
}

// NeedLeaderElection is false: every replica reads the policy.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Subscribe returns a channel that holds one notice when the admission
// objects changed since it was last read; it is dropped when ctx ends.
func (w *Watcher) Subscribe(ctx context.Context) <-chan event.GenericEvent {
	return w.subscribe(ctx, subscription{all: true})
}

// SubscribeKind returns a channel that holds one notice when the check of
// the parents of gr changed since it was last read (the policy, gr's
// binding, or the parameters it reads: the default ServiceAccounts, and
// a published kind's own): a Bundle published elsewhere does not wake
// every parent. It is dropped when ctx ends.
func (w *Watcher) SubscribeKind(ctx context.Context, gr schema.GroupResource) <-chan event.GenericEvent {
	return w.subscribe(ctx, subscription{kind: gr, seen: w.state(ctx, gr)})
}

func (w *Watcher) subscribe(ctx context.Context, sub subscription) <-chan event.GenericEvent {
	ch := make(chan event.GenericEvent, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = map[chan event.GenericEvent]subscription{}
	}
	w.subs[ch] = sub
	context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, ch)
	})
	return ch
}

// notify sends a notice to each subscriber whose check changed. The
// states are read from the cache without the lock held, under Start's
// context, so a stopping cache never holds it.
func (w *Watcher) notify() {
	w.mu.Lock()
	ctx := w.ctx
	kinds := map[schema.GroupResource]string{}
	for _, sub := range w.subs {
		if !sub.all {
			kinds[sub.kind] = ""
		}
	}
	w.mu.Unlock()
	if ctx == nil {
		return
	}
	for gr := range kinds {
		kinds[gr] = w.state(ctx, gr)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch, sub := range w.subs {
		if !sub.all {
			st, ok := kinds[sub.kind]
			if !ok || st == sub.seen {
				continue
			}
			sub.seen = st
			w.subs[ch] = sub
		}
		select {
		case ch <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{}}:
		default:
		}
	}
}

// state is what the check of gr's parents depends on, as the cache holds
// it: the policy's and the binding's uid and generation, and the
// parameters gr's parents read.
func (w *Watcher) state(ctx context.Context, gr schema.GroupResource) string {
	var parts []string
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := w.cache.Get(ctx, client.ObjectKey{Name: PolicyName}, policy); err == nil {
		parts = append(parts, fmt.Sprintf("policy=%s/%d", policy.UID, policy.Generation))
	}
	name := CompositionBindingName
	if gr != CompositionsResource {
		name = KindBindingName(gr)
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := w.cache.Get(ctx, client.ObjectKey{Name: name}, b); err == nil {
		parts = append(parts, fmt.Sprintf("binding=%s/%d", b.UID, b.Generation))
	}
	params, _ := w.Params(ctx)
	kindPrefix := "kind." + gr.String() + "."
	for key, v := range params {
		key := strings.TrimPrefix(key, "epoch.")
		if strings.HasPrefix(key, "default") || key == InstalledKey || gr != CompositionsResource && strings.HasPrefix(key, kindPrefix) {
			parts = append(parts, key+"="+v)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// Params returns the policy's parameters as the cache holds them, nil
// when the ConfigMap is missing.
func (w *Watcher) Params(ctx context.Context) (Params, error) {
	cm := &corev1.ConfigMap{}
	err := w.cache.Get(ctx, client.ObjectKey{Namespace: w.namespace, Name: ParamsName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", w.namespace, ParamsName, err)
	}
	if cm.Data == nil {
		return Params{}, nil
	}
	return Params(cm.Data), nil
}

// Coverage returns the check the API server makes of the parents of
// resource gr (CompositionsResource, or a published kind's), as the
// cache holds its objects now.
func (w *Watcher) Coverage(ctx context.Context, gr schema.GroupResource) (Coverage, error) {
	c := Coverage{kind: gr}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	switch err := w.cache.Get(ctx, client.ObjectKey{Name: PolicyName}, policy); {
	case apierrors.IsNotFound(err):
		c.problem = "stencil's ValidatingAdmissionPolicy " + PolicyName + " is missing"
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read ValidatingAdmissionPolicy %s: %w", PolicyName, err)
	}
	name := CompositionBindingName
	if gr != CompositionsResource {
		name = KindBindingName(gr)
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	switch err := w.cache.Get(ctx, client.ObjectKey{Name: name}, b); {
	case apierrors.IsNotFound(err):
		c.problem = "the ValidatingAdmissionPolicyBinding " + name + " of " + gr.String() + " is missing"
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read ValidatingAdmissionPolicyBinding %s: %w", name, err)
	}
	params, err := w.Params(ctx)
	if err != nil {
		return c, err
	}
	c.policy, c.binding, c.params = policy, b, params
	c.problem = c.validate(w.namespace)
	return c, nil
}

// Coverage is the check the API server makes of the parents of one kind:
// stencil's policy, the kind's binding and the parameters, as read.
type Coverage struct {
	kind    schema.GroupResource
	policy  *admissionregistrationv1.ValidatingAdmissionPolicy
	binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	params  Params
	// problem says why no parent of the kind can be trusted now.
	problem string
}

// Problem says why the API server does not check the parents of the kind
// as stencil needs (an object missing, being deleted or changed), "" when
// it does.
func (c Coverage) Problem() string { return c.problem }

// ID names the check: the uids of the policy and of the binding. A
// policy or binding deleted and made again is another check.
func (c Coverage) ID() string {
	if c.policy == nil || c.binding == nil {
		return ""
	}
	return string(c.policy.UID) + "/" + string(c.binding.UID)
}

// Installed returns when stencil's admission policy was first installed
// in the cluster, as the parameters record it (InstalledKey), and false
// when they do not say yet.
func (c Coverage) Installed() (time.Time, bool) { return c.params.installed() }

// validate returns why the objects read do not make the check stencil
// needs, "" when they do. The policy and the binding must be stencil's,
// as Policy and the kind's binding make them (a field the API server
// defaults aside), and not being deleted; the parameters must exist.
func (c Coverage) validate(namespace string) string {
	want := Policy().Spec
	got := c.policy.Spec
	switch {
	case c.policy.DeletionTimestamp != nil:
		return "stencil's ValidatingAdmissionPolicy " + PolicyName + " is being deleted"
	case !equality.Semantic.DeepEqual(got.Validations, want.Validations) || !equality.Semantic.DeepEqual(got.Variables, want.Variables) ||
		!equality.Semantic.DeepEqual(got.MatchConditions, want.MatchConditions) || !equality.Semantic.DeepEqual(got.ParamKind, want.ParamKind) ||
		!equality.Semantic.DeepEqual(got.FailurePolicy, want.FailurePolicy) || !sameMatch(got.MatchConstraints, want.MatchConstraints):
		return "stencil's ValidatingAdmissionPolicy " + PolicyName + " is not the one this controller checks with (changed by hand, or another version of stencil's)"
	}
	wantB := CompositionBinding(namespace)
	if c.kind != CompositionsResource {
		wantB = KindBinding(namespace, c.kind)
	}
	b := c.binding
	switch {
	case b.DeletionTimestamp != nil:
		return "the ValidatingAdmissionPolicyBinding " + b.Name + " is being deleted"
	case b.Spec.PolicyName != PolicyName || !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) ||
		!equality.Semantic.DeepEqual(b.Spec.ParamRef, wantB.Spec.ParamRef) || !sameMatch(b.Spec.MatchResources, wantB.Spec.MatchResources):
		return "the ValidatingAdmissionPolicyBinding " + b.Name + " does not bind stencil's policy to " + c.kind.String() + " as stencil does (changed by hand?)"
	case c.params == nil:
		return "the ConfigMap " + namespace + "/" + ParamsName + " of stencil's admission policy is missing"
	}
	return ""
}

// sameMatch reports whether got matches what want matches: the same rules
// (the scope the API server defaults aside) and no selector or exclusion
// narrowing them.
func sameMatch(got, want *admissionregistrationv1.MatchResources) bool {
	if got == nil || len(got.ExcludeResourceRules) > 0 || len(got.ResourceRules) != len(want.ResourceRules) {
		return false
	}
	for _, sel := range []*metav1.LabelSelector{got.NamespaceSelector, got.ObjectSelector} {
		if sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
			return false
		}
	}
	for i := range want.ResourceRules {
		g, w := got.ResourceRules[i], want.ResourceRules[i]
		g.Scope, w.Scope = nil, nil
		if !equality.Semantic.DeepEqual(g, w) {
			return false
		}
	}
	return true
}

// Check returns the ServiceAccount the API server checks for a parent of
// the kind that names the account named ("" none) and is of shard, and
// the epoch of that check: when the policy or the binding was created, or
// the default it took the account from last changed, whichever is latest.
// ok is false when the parameters name no account for it (no Bundle
// publishes the kind, no controller serves the shard): the API server
// refuses such a parent, and problem says why.
func (c Coverage) Check(named, shard string) (sa string, epoch time.Time, problem string) {
	epoch = c.policy.CreationTimestamp.Time
	if t := c.binding.CreationTimestamp.Time; t.After(epoch) {
		epoch = t
	}
	later := func(key string) {
		if t := c.params.epoch(key); t.After(epoch) {
			epoch = t
		}
	}
	if c.kind != CompositionsResource {
		bundleKey, kindSA := KindKeys(c.kind)
		if c.params[bundleKey] == "" {
			return "", epoch, "no Bundle publishes " + c.kind.String() + " in the parameters of stencil's admission policy"
		}
		if named != "" {
			return named, epoch, ""
		}
		later(kindSA)
		if sa := c.params[kindSA]; sa != "" {
			return sa, epoch, ""
		}
	} else if named != "" {
		return named, epoch, ""
	}
	key := DefaultKey(shard)
	sa, ok := c.params[key]
	if !ok {
		return "", epoch, "no stencil controller has published the default ServiceAccount of " + shardName(shard) + " to stencil's admission policy"
	}
	later(key)
	return sa, epoch, ""
}

// shardName names a shard in messages.
func shardName(shard string) string {
	if shard == "" {
		return "unsharded parents"
	}
	return "shard " + shard
}
