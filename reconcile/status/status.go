// Package status builds a parent's status from what a pass observed: the
// kstatus of every member (read from the member cache, or as an apply
// just left it: AfterApply), the readiness summary ("4/5 ready"), and one
// helper per condition state (SetReady, SetReconciling, SetStalled,
// SetSuspended), which keep the kstatus conventions: Ready always
// present, Reconciling and Stalled only while True, never both. The pass
// (package reconcile) writes the status it built once, at its end.
// Events (events.go) collects what a pass changed for its one Applied and
// one Pruned summary event.
package status

import (
	"context"
	"fmt"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
)

// Members reads every planned member of the set id, whose record is rec,
// from the cache and computes its kstatus. A member the cache does not
// hold yet is NotFound; an object of that name that is not a member of
// the set (another set's, nobody's, or one carrying the set's label that
// the record does not name) says only that (NotAMember), nothing of its
// state.
func Members(ctx context.Context, reader client.Reader, id string, rec *applyset.Record, objs []*unstructured.Unstructured) []v1alpha1.MemberStatus {
	out, _ := Observe(ctx, reader, id, rec, objs, nil, nil)
	return out
}

// NotAMember is the message of a planned object whose name another object
// has: its state is not the set's to report.
const NotAMember = "not a member of this set"

// Observe is Members with the Bundle's readiness rules (see Judge), and
// also returns the live objects of the members found, by their ids (see
// outputs.ID), for the Bundle's outputs. Only the set's own members
// (applyset.Owns: its part-of label and the set's record rec) are judged
// or returned: a tenant's status never shows another's object.
func Observe(ctx context.Context, reader client.Reader, id string, rec *applyset.Record, objs []*unstructured.Unstructured, rules *outputs.Set, parent map[string]any) ([]v1alpha1.MemberStatus, map[string]map[string]any) {
	out := make([]v1alpha1.MemberStatus, 0, len(objs))
	lives := map[string]map[string]any{}
	for _, want := range objs {
		gvk := want.GroupVersionKind()
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
		if apierrors.IsNotFound(err) {
			live, err = nil, nil
		}
		if live != nil && err == nil && applyset.Owns(live, gvk.GroupKind(), id, rec, applyset.Consent{}) != applyset.Ours {
			out = append(out, v1alpha1.MemberStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: want.GetNamespace(), Name: want.GetName(),
				Status: kstatus.UnknownStatus.String(), Message: NotAMember})
			continue
		}
		ms := MemberOf(gvk, want.GetNamespace(), want.GetName(), live, err)
		id := outputs.ID(want)
		if live != nil && err == nil {
			Judge(ctx, &ms, rules, parent, id, live)
			lives[id] = ExpressionView(live)
		}
		out = append(out, ms)
	}
	return out, lives
}

// AfterApplyReader reads members through next (the member cache), but answers
// with the object an apply of this pass returned where next does not know
// it yet: it lacks the object, or holds it at the version the apply found.
// So the status a pass writes right after creating or changing members
// reflects the writes (a ConfigMap just created is Current), not the
// cache's lag, and no second pass and status write follow only to catch
// up. A cached object at another version is newer than the apply and wins.
type AfterApplyReader struct {
	next    client.Reader
	applied map[appliedKey]applyset.ApplyResult // the results with a Live object
}

// appliedKey names an applied object.
type appliedKey struct {
	gvk             schema.GroupVersionKind
	namespace, name string
}

// AfterApply reads through next, answering for the objects of results as
// the applies left them.
func AfterApply(next client.Reader, results []applyset.ApplyResult) AfterApplyReader {
	a := AfterApplyReader{next: next, applied: make(map[appliedKey]applyset.ApplyResult, len(results))}
	for _, res := range results {
		if res.Live != nil {
			a.applied[appliedKey{gvk: res.Object.GroupVersionKind(), namespace: res.Object.GetNamespace(), name: res.Object.GetName()}] = res
		}
	}
	return a
}

// Get reads key through next, or as the apply left it (see AfterApplyReader).
func (a AfterApplyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := a.next.Get(ctx, key, obj, opts...)
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || (err != nil && !apierrors.IsNotFound(err)) {
		return err
	}
	res, ok := a.applied[appliedKey{gvk: u.GroupVersionKind(), namespace: key.Namespace, name: key.Name}]
	if ok && (apierrors.IsNotFound(err) || u.GetResourceVersion() == res.Before) {
		res.Live.DeepCopyInto(u)
		return nil
	}
	return err
}

// List lists through next.
func (a AfterApplyReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return a.next.List(ctx, list, opts...)
}

// MemberOf is the status of one member: its kstatus when live is the
// object read, NotFound when live is nil, Unknown when reading failed.
func MemberOf(gvk schema.GroupVersionKind, namespace, name string, live *unstructured.Unstructured, err error) v1alpha1.MemberStatus {
	ms := v1alpha1.MemberStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name}
	switch {
	case err != nil:
		ms.Status, ms.Message = kstatus.UnknownStatus.String(), err.Error()
	case live == nil:
		ms.Status, ms.Message = kstatus.NotFoundStatus.String(), "not found"
	default:
		res, err := kstatus.Compute(live)
		if err != nil {
			ms.Status, ms.Message = kstatus.UnknownStatus.String(), err.Error()
			break
		}
		ms.Status = res.Status.String()
		if res.Status != kstatus.CurrentStatus {
			ms.Message = res.Message
		}
	}
	return ms
}

// Summary counts the ready members, as "4/5 ready".
func Summary(members []v1alpha1.MemberStatus) string {
	ready := 0
	for _, m := range members {
		if m.Status == kstatus.CurrentStatus.String() {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d ready", ready, len(members))
}

// Summarize sets the conditions and summary from the members' statuses:
// all Current → Ready; any Failed → Stalled, naming the first; otherwise
// Reconciling, naming the first member not Current.
func Summarize(st *v1alpha1.CompositionStatus, generation int64, members []v1alpha1.MemberStatus) {
	var failed, pending *v1alpha1.MemberStatus
	for i := range members {
		m := &members[i]
		switch m.Status {
		case kstatus.CurrentStatus.String():
		case kstatus.FailedStatus.String():
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
	st.Summary = Summary(members)
	switch {
	case failed != nil:
		SetStalled(st, generation, v1alpha1.ReasonMemberFailed, fmt.Sprintf("%s: %s: %s", memberRef(failed), failed.Status, failed.Message))
	case pending != nil:
		SetReconciling(st, generation, v1alpha1.ReasonProgressing, fmt.Sprintf("%s; waiting for %s: %s: %s", st.Summary, memberRef(pending), pending.Status, pending.Message))
	default:
		SetReady(st, generation, st.Summary)
	}
}

func memberRef(m *v1alpha1.MemberStatus) string {
	if m.Namespace == "" {
		return m.Kind + "/" + m.Name
	}
	return m.Kind + "/" + m.Namespace + "/" + m.Name
}

// SetReady marks the Composition Ready: no Reconciling, no Stalled.
func SetReady(st *v1alpha1.CompositionStatus, gen int64, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// SetReconciling marks the Composition in progress: Ready=False and Reconciling=True.
func SetReconciling(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(st, gen, v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// SetSuspended marks a suspended Composition: Ready=False with reason
// Suspended, neither Reconciling (nothing is in progress) nor Stalled.
func SetSuspended(st *v1alpha1.CompositionStatus, gen int64, msg string) {
	setCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended, msg)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionStalled)
}

// KeepTransitionTimes gives each condition of st that has the same status
// in old its lastTransitionTime there: conditions are built afresh every
// pass, and a condition's transition time changes only when its status does.
func KeepTransitionTimes(st *v1alpha1.CompositionStatus, old []metav1.Condition) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if prev := meta.FindStatusCondition(old, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
}

// SetStalled marks the Composition stuck until something changes:
// Ready=False and Stalled=True.
func SetStalled(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
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
