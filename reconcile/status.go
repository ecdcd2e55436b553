package reconcile

import (
	"context"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Condition types, after kstatus: Ready is always present; Reconciling and
// Stalled appear only while True, never both.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons of the conditions stencil writes.
const (
	ReasonReady           = "Ready"
	ReasonProgressing     = "Progressing"
	ReasonMemberFailed    = "MemberFailed"
	ReasonRenderFailed    = "RenderFailed"
	ReasonRefused         = "Refused"
	ReasonBundleNotFound  = "BundleNotFound"
	ReasonApplyFailed     = "ApplyFailed"
	ReasonPruneFailed     = "PruneFailed"
	ReasonReconcileFailed = "ReconcileFailed"
	ReasonSuspended       = "Suspended"
	ReasonDeleting        = "Deleting"
)

// Reasons of Stalled=True that no retry can fix: stencil writes nothing
// more of the Composition until its spec or its Bundle changes (Forbidden:
// or forbiddenRecheck passes, since RBAC changes raise no event). The
// message names the object, and for Forbidden the verb, the kind and who
// lacks the permission.
const (
	// ReasonForbidden: the controller may not list or watch a member kind
	// (cluster-wide, as its cache needs), or the Composition's
	// ServiceAccount may not create, patch or delete one, or the API server
	// forbade a write (RBAC, a quota, an admission plugin).
	ReasonForbidden = "Forbidden"
	// ReasonInvalid: the API server rejected an object as invalid (422).
	ReasonInvalid = "Invalid"
	// ReasonBadRequest: the API server could not accept the request (400)
	// or decode the object (a 500 saying so, as for a Secret whose data is
	// not base64).
	ReasonBadRequest = "BadRequest"
	// ReasonTooLarge: an object is too large for the API server (413) or etcd.
	ReasonTooLarge = "RequestEntityTooLarge"
	// ReasonEmptyRender: the render produced no object while the set has
	// members; nothing is pruned unless the Composition or the Bundle is
	// annotated stencil.dev/allow-empty-render: "true".
	ReasonEmptyRender = "EmptyRender"
	// ReasonFlapping: one member was written flapWrites times within
	// flapWindow with no change of input: something else keeps changing
	// fields stencil sets. The message names the member and those fields.
	ReasonFlapping = "Flapping"
)

// memberStatuses reads every planned member from the cache and computes its
// kstatus. A member the cache does not hold yet is NotFound.
func memberStatuses(ctx context.Context, reader client.Reader, objs []*unstructured.Unstructured) []v1alpha1.MemberStatus {
	out := make([]v1alpha1.MemberStatus, 0, len(objs))
	for _, want := range objs {
		gvk := want.GroupVersionKind()
		ms := v1alpha1.MemberStatus{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: want.GetNamespace(), Name: want.GetName()}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		err := reader.Get(ctx, client.ObjectKeyFromObject(want), live)
		switch {
		case apierrors.IsNotFound(err):
			ms.Status, ms.Message = status.NotFoundStatus.String(), "not found"
		case err != nil:
			ms.Status, ms.Message = status.UnknownStatus.String(), err.Error()
		default:
			res, err := status.Compute(live)
			if err != nil {
				ms.Status, ms.Message = status.UnknownStatus.String(), err.Error()
			} else {
				ms.Status = res.Status.String()
				if res.Status != status.CurrentStatus {
					ms.Message = res.Message
				}
			}
		}
		out = append(out, ms)
	}
	return out
}

// summarize sets the conditions and summary from the members' statuses:
// all Current → Ready; any Failed → Stalled, naming the first; otherwise
// Reconciling, naming the first member not Current.
func summarize(st *v1alpha1.CompositionStatus, generation int64, members []v1alpha1.MemberStatus) {
	ready := 0
	var failed, pending *v1alpha1.MemberStatus
	for i := range members {
		m := &members[i]
		switch m.Status {
		case status.CurrentStatus.String():
			ready++
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
	st.Summary = fmt.Sprintf("%d/%d ready", ready, len(members))
	switch {
	case failed != nil:
		setStalled(st, generation, ReasonMemberFailed, fmt.Sprintf("%s: %s: %s", memberRef(failed), failed.Status, failed.Message))
	case pending != nil:
		setReconciling(st, generation, ReasonProgressing, fmt.Sprintf("%s; waiting for %s: %s: %s", st.Summary, memberRef(pending), pending.Status, pending.Message))
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
	setCondition(st, gen, ConditionReady, metav1.ConditionTrue, ReasonReady, msg)
	meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
}

// setReconciling marks the Composition in progress: Ready=False and Reconciling=True.
func setReconciling(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
	setCondition(st, gen, ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(st, gen, ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
}

// setStalled marks the Composition stuck until something changes:
// Ready=False and Stalled=True.
func setStalled(st *v1alpha1.CompositionStatus, gen int64, reason, msg string) {
	setCondition(st, gen, ConditionReady, metav1.ConditionFalse, reason, msg)
	setCondition(st, gen, ConditionStalled, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
}

func setCondition(st *v1alpha1.CompositionStatus, gen int64, typ string, s metav1.ConditionStatus, reason, msg string) {
	const maxMessage = 32 * 1024
	if len(msg) > maxMessage {
		msg = msg[:maxMessage]
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen})
}
