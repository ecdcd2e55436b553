package trace

import (
	"context"
	"slices"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// Trace is what `stencil trace` shows of one parent.
type Trace struct {
	// Parent is the parent itself, its members under it.
	Parent Node `json:"parent"`
	// ApplySet is the parent's ApplySet id, the part-of label of its
	// members.
	ApplySet string `json:"applySet,omitempty"`
	// Bundle is the Bundle the parent renders, BundleRevision the
	// revision it last rendered, Generation and ObservedGeneration its
	// spec's generation and the one last reconciled.
	Bundle             string `json:"bundle,omitempty"`
	BundleRevision     string `json:"bundleRevision,omitempty"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	// Rollout is the Bundle's rollout the parent is in, when the caller
	// may read the Bundle.
	Rollout *v1alpha1.RolloutStatus `json:"rollout,omitempty"`
	// Conditions are the parent's conditions but Ready (on the parent's
	// node): Reconciling, Stalled, RevisionHeld, OutputsReady.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Hooks are the Helm hooks the parent's status records as run.
	Hooks *v1alpha1.HooksStatus `json:"hooks,omitempty"`
	// Lookups are what the parent's last render looked up, as its status
	// records them (keys and answers, never what was read), and
	// LookupsOmitted how many more it made.
	Lookups        []v1alpha1.LookupStatus `json:"lookups,omitempty"`
	LookupsOmitted int32                   `json:"lookupsOmitted,omitempty"`
}

// Node is one object of the tree.
type Node struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	// Ready is True, False or Unknown: the parent's Ready condition, a
	// member's kstatus (Current is True).
	Ready string `json:"ready"`
	// Status is a member's kstatus (Current, InProgress, Failed, ...) or
	// the parent's summary; Reason the parent's Ready reason, or what a
	// member's kstatus says.
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Access is "" when the object was read, else why not: Forbidden
	// (the caller may not get it), NotFound, NotServed.
	Access   string       `json:"access,omitempty"`
	Created  *metav1.Time `json:"created,omitempty"`
	Children []Node       `json:"children,omitempty"`
	// owners are the uids the object's ownerReferences name (see nest).
	owners []types.UID
}

// Reader is what Collect reads with: the caller's dynamic client and
// RESTMapper.
type Reader struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// Collect reads parent (of kind gvk, in ns) and its members as r may.
func Collect(ctx context.Context, r Reader, gvk schema.GroupVersionKind, ns, name string) (*Trace, *unstructured.Unstructured, error) {
	m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, err
	}
	obj, err := r.Dynamic.Resource(m.Resource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	st := v1alpha1.CompositionStatus{}
	if raw, ok := obj.Object["status"].(map[string]any); ok {
		// An instance's status also holds its Bundle's outputs: not
		// stencil's fields, left out.
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	t := &Trace{Parent: parentNode(obj, st), BundleRevision: st.BundleRevision, Generation: obj.GetGeneration(), ObservedGeneration: st.ObservedGeneration}
	t.ApplySet = obj.GetLabels()[applyset.LabelApplySetID]
	t.Bundle, _, _ = unstructured.NestedString(obj.Object, "spec", "bundle")
	if gvk.GroupKind() != v1alpha1.GroupVersion.WithKind("Composition").GroupKind() {
		t.Bundle = publisher(ctx, r, m.Resource.GroupResource()) // an instance's spec is its values
	}
	for _, c := range st.Conditions {
		if c.Type != v1alpha1.ConditionReady {
			t.Conditions = append(t.Conditions, c)
		}
	}
	t.Hooks = st.Hooks
	t.Lookups, t.LookupsOmitted = st.Lookups, st.LookupsOmitted
	t.Rollout = rolloutOf(ctx, r, t.Bundle, obj.GetLabels()[shard.Label])
	members := make([]Node, 0, len(st.Members))
	for _, ms := range st.Members {
		members = append(members, member(ctx, r, ms))
	}
	t.Parent.Children = nest(members)
	return t, obj, nil
}

func parentNode(obj *unstructured.Unstructured, st v1alpha1.CompositionStatus) Node {
	n := node(obj)
	n.Ready, n.Status = string(metav1.ConditionUnknown), st.Summary
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c != nil {
		n.Ready, n.Reason, n.Message = string(c.Status), c.Reason, c.Message
	}
	return n
}

func node(obj *unstructured.Unstructured) Node {
	created := obj.GetCreationTimestamp()
	return Node{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()), Created: &created}
}

// member reads one member the parent's status lists, live, and computes
// its kstatus.
func member(ctx context.Context, r Reader, ms v1alpha1.MemberStatus) Node {
	gv := schema.GroupVersion{Group: ms.Group, Version: ms.Version}
	n := Node{APIVersion: gv.String(), Kind: ms.Kind, Namespace: ms.Namespace, Name: ms.Name, Ready: string(metav1.ConditionUnknown), Status: ms.Status, Message: ms.Message}
	m, err := r.Mapper.RESTMapping(schema.GroupKind{Group: ms.Group, Kind: ms.Kind}, ms.Version)
	if err != nil {
		n.Access = "NotServed"
		return n
	}
	var ri dynamic.ResourceInterface = r.Dynamic.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = r.Dynamic.Resource(m.Resource).Namespace(ms.Namespace)
	}
	obj, err := ri.Get(ctx, ms.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		n.Access, n.Status, n.Message = "Forbidden", "", ""
		return n
	case apierrors.IsNotFound(err):
		n.Access, n.Status, n.Message = "NotFound", "", ""
		return n
	case err != nil:
		n.Access, n.Message = "Unreadable", err.Error()
		return n
	}
	live := node(obj)
	live.Children = nil
	res, err := kstatus.Compute(obj)
	if err != nil {
		live.Ready, live.Status, live.Reason = string(metav1.ConditionUnknown), kstatus.UnknownStatus.String(), err.Error()
		return withOwners(live, obj)
	}
	live.Status, live.Reason = res.Status.String(), res.Message
	live.Ready = string(metav1.ConditionFalse)
	switch res.Status {
	case kstatus.CurrentStatus:
		live.Ready = string(metav1.ConditionTrue)
	case kstatus.UnknownStatus:
		live.Ready = string(metav1.ConditionUnknown)
	}
	return withOwners(live, obj)
}

func withOwners(n Node, obj *unstructured.Unstructured) Node {
	for _, o := range obj.GetOwnerReferences() {
		n.owners = append(n.owners, o.UID)
	}
	return n
}

// nest puts each member under the member its ownerReferences name (a
// ReplicaSet a set renders under its Deployment), else at the top; a
// member whose owners lead round in a circle is at the top too.
func nest(members []Node) []Node {
	byUID := map[string]int{}
	for i, m := range members {
		if m.UID != "" {
			byUID[m.UID] = i
		}
	}
	up := make([]int, len(members))
	for i, m := range members {
		up[i] = -1
		for _, o := range m.owners {
			if j, ok := byUID[string(o)]; ok && j != i {
				up[i] = j
				break
			}
		}
	}
	under := map[int][]int{}
	var top []int
	for i := range members {
		at, steps := i, 0
		for at >= 0 && steps <= len(members) {
			at, steps = up[at], steps+1
		}
		if up[i] < 0 || at >= 0 {
			top = append(top, i)
		} else {
			under[up[i]] = append(under[up[i]], i)
		}
	}
	var build func(i int) Node
	build = func(i int) Node {
		n := members[i]
		n.owners = nil
		for _, c := range under[i] {
			n.Children = append(n.Children, build(c))
		}
		return n
	}
	out := make([]Node, 0, len(top))
	for _, i := range top {
		out = append(out, build(i))
	}
	return out
}

// publisher is the Bundle that publishes the kind of resource gr, as its
// CRD's label says: "" when the caller may not read the CRD.
func publisher(ctx context.Context, r Reader, gr schema.GroupResource) string {
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crd, err := r.Dynamic.Resource(crds).Get(ctx, gr.String(), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return crd.GetLabels()[publish.LabelBundle]
}

// rolloutOf reads the rollout of bundle in shard, "" when the caller may
// not read the Bundle or it has none.
func rolloutOf(ctx context.Context, r Reader, bundle, shardName string) *v1alpha1.RolloutStatus {
	if bundle == "" {
		return nil
	}
	obj, err := r.Dynamic.Resource(v1alpha1.GroupVersion.WithResource("bundles")).Get(ctx, bundle, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var b v1alpha1.Bundle
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &b); err != nil {
		return nil
	}
	i := slices.IndexFunc(b.Status.Rollouts, func(s v1alpha1.RolloutStatus) bool { return s.Shard == shardName })
	if i < 0 {
		return nil
	}
	return &b.Status.Rollouts[i]
}

// age is how long ago t was, as kubectl get prints it.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "<unknown>"
	}
	return humanDuration(now.Sub(t.Time))
}
