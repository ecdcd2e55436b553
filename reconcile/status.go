package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// memberStatuses reads every planned member from the cache and computes its
// kstatus. A member the cache does not hold yet is NotFound.
func memberStatuses(ctx context.Context, reader client.Reader, objs []*unstructured.Unstructured) []v1alpha1.MemberStatus {
	out := make([]v1alpha1.MemberStatus, 0, len(objs))
	for _, want := range objs {
		gvk := want.GroupVersionKind()
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		out = append(out, memberStatus(gvk, want.GetNamespace(), want.GetName(), live, err))
	}
	return out
}

// afterApply reads members through next (the member cache), but answers
// with the object an apply of this pass returned where next does not know
// it yet: it lacks the object, or holds it at the version the apply found.
// So the status a pass writes right after creating or changing members
// reflects the writes (a ConfigMap just created is Current), not the
// cache's lag, and no second pass and status write follow only to catch
// up. A cached object at another version is newer than the apply and wins.
type afterApply struct {
	next    client.Reader
	applied map[memberKey]applyset.ApplyResult // the results with a Live object
}

func newAfterApply(next client.Reader, results []applyset.ApplyResult) afterApply {
	a := afterApply{next: next, applied: make(map[memberKey]applyset.ApplyResult, len(results))}
	for _, res := range results {
		if res.Live != nil {
			a.applied[memberKey{gvk: res.Object.GroupVersionKind(), namespace: res.Object.GetNamespace(), name: res.Object.GetName()}] = res
		}
	}
	return a
}

func (a afterApply) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := a.next.Get(ctx, key, obj, opts...)
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || (err != nil && !apierrors.IsNotFound(err)) {
		return err
	}
	res, ok := a.applied[memberKey{gvk: u.GroupVersionKind(), namespace: key.Namespace, name: key.Name}]
	if ok && (apierrors.IsNotFound(err) || u.GetResourceVersion() == res.Before) {
		res.Live.DeepCopyInto(u)
		return nil
	}
	return err
}

func (a afterApply) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return a.next.List(ctx, list, opts...)
}

// memberStatus is the status of one member: its kstatus when live is the
// object read, NotFound when live is nil, Unknown when reading failed.
func memberStatus(gvk schema.GroupVersionKind, namespace, name string, live *unstructured.Unstructured, err error) v1alpha1.MemberStatus {
	ms := v1alpha1.MemberStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
	switch {
	case err != nil:
		ms.Status, ms.Message = status.UnknownStatus.String(), err.Error()
	case live == nil:
		ms.Status, ms.Message = status.NotFoundStatus.String(), "not found"
	default:
		res, err := status.Compute(live)
		if err != nil {
			ms.Status, ms.Message = status.UnknownStatus.String(), err.Error()
			break
		}
		ms.Status = res.Status.String()
		if res.Status != status.CurrentStatus {
			ms.Message = res.Message
		}
	}
	return ms
}

// summary counts the ready members, as "4/5 ready".
func summary(members []v1alpha1.MemberStatus) string {
	ready := 0
	for _, m := range members {
		if m.Status == status.CurrentStatus.String() {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d ready", ready, len(members))
}

// summarize sets the conditions and summary from the members' statuses:
// all Current → Ready; any Failed → Stalled, naming the first; otherwise
// Reconciling, naming the first member not Current.
func summarize(st *v1alpha1.CompositionStatus, generation int64, members []v1alpha1.MemberStatus) {
	var failed, pending *v1alpha1.MemberStatus
	for i := range members {
		m := &members[i]
		switch m.Status {
		case status.CurrentStatus.String():
		case status.FailedStatus.String():
			if failed == nil {
				failed = m
			}
		default:
			if pending == nil {
				pending = m
			}
		}
	}
	st.Members = members
	st.Summary = summary(members)
	switch {
	case failed != nil:
		setStalled(st, generation, v1alpha1.ReasonMemberFailed, fmt.Sprintf("%s: %s: %s", memberRef(failed), failed.Status, failed.Message))
	case pending != nil:
		setReconciling(st, generation, v1alpha1.ReasonProgressing, fmt.Sprintf("%s; waiting for %s: %s: %s", st.Summary, memberRef(pending), pending.Status, pending.Message))
	default:
		setReady(st, generation, st.Summary)
	}
}

func memberRef(m *v1alpha1.MemberStatus) string {
	if m.Namespace == "" {
		return m.Kind + "/" + m.Name
	}
	return m.Kind + "/" + m.Namespace + "/" + m.Name
}

// setReady marks the Composition Ready: no Reconciling, no Stalled.
func setReady(st *v1alpha1.CompositionStatus, gen int64, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// setReconciling marks the Composition in progress: Ready=False and Reconciling=True.
func setReconciling(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(st, gen, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// setSuspended marks a suspended Composition: Ready=False with reason
// Suspended, neither Reconciling (nothing is in progress) nor Stalled.
func setSuspended(st *v1alpha1.CompositionStatus, gen int64, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// keepTransitionTimes gives each condition of st that has the same status
// in old its lastTransitionTime there: conditions are built afresh every
// pass, and a condition's transition time changes only when its status does.
func keepTransitionTimes(st *v1alpha1.CompositionStatus, old []metav1.Condition) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if prev := meta.FindStatusCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
}

// setStalled marks the Composition stuck until something changes:
// Ready=False and Stalled=True.
func setStalled(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(st, gen, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
}

func setCondition(st *v1alpha1.CompositionStatus, gen int64, typ string, s metav1.ConditionStatus, reason, msg string) {
	const maxMessage = 32 * 1024
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}

// suspended reports a suspended Composition: nothing is rendered, applied,
// pruned or written but its status. status.observedGeneration stays at the
// generation last reconciled, so kstatus readers (Flux, Argo CD, kubectl
// wait) see a generation that is not applied as in progress, never as
// done; Ready is False with reason Suspended. The members are the live
// objects of the set, found by their part-of label over the recorded
// inventory, each with its kstatus.
func (r *CompositionReconciler) suspended(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.status.ObservedGeneration = s.comp.ParentStatus().ObservedGeneration
	r.passes.forget(client.ObjectKeyFromObject(s.comp))
	msg := fmt.Sprintf("suspended: generation %d is not applied; nothing is written while spec.suspend is true", s.comp.GetGeneration())
	if last := s.comp.ParentStatus().ObservedGeneration; last > 0 {
		msg = fmt.Sprintf("suspended: generation %d is not applied (generation %d was the last reconciled); nothing is written while spec.suspend is true", s.comp.GetGeneration(), last)
	}
	setSuspended(&s.status, s.comp.GetGeneration(), msg)
	live, err := r.recordedParent(ctx, s.comp)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.parent = live
	listed := r.cachedPruner(s).List(ctx, live.inventory, s.comp.GetNamespace())
	objs := make([]*unstructured.Unstructured, 0, len(listed.Members))
	for _, m := range listed.Members {
		if !slices.ContainsFunc(m.Meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == applyset.FieldManager }) {
			continue // another controller's object carrying a copy of the label
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(m.GVK)
		u.SetNamespace(m.Meta.Namespace)
		u.SetName(m.Meta.Name)
		objs = append(objs, u)
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		if d := plan.KindRank(a.GetKind()) - plan.KindRank(b.GetKind()); d != 0 {
			return d
		}
		return strings.Compare(applyset.Ref(a), applyset.Ref(b))
	})
	s.status.Members = memberStatuses(ctx, memberReader{r}, objs)
	s.status.Summary = summary(s.status.Members)
	return ctrl.Result{}, nil
}
