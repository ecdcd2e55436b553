package applyset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/openapi"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset/nochange"
	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// FieldManager is the one field manager stencil applies with. It never
// changes: a renamed manager would leave its fields owned forever.
const FieldManager = "stencil"

// Action is what an apply did to one object.
type Action string

const (
	// Created means the object did not exist and was created.
	Created Action = "Created"
	// Configured means the object existed and the apply changed it.
	Configured Action = "Configured"
	// Unchanged means the local server-side apply found that an apply
	// would change nothing: no request was sent.
	Unchanged Action = "Unchanged"
	// Reapplied means an apply was sent (the local decision could not rule
	// it out) and the API server changed nothing: the resourceVersion
	// stayed the same.
	Reapplied Action = "Reapplied"
	// Failed means the apply was refused or could not be made.
	Failed Action = "Failed"
)

// ApplyResult is the outcome of applying one object.
type ApplyResult struct {
	// Object is the desired object that was applied.
	Object *unstructured.Unstructured
	// UID is the live object's UID after the apply ("" when Failed).
	UID types.UID
	// Action is what the apply did.
	Action Action
	// Err says why the apply failed.
	Err error
	// Reason, when the apply failed in a way no retry can fix (see
	// TerminalReason), is the condition reason to stall with; "" when the
	// failure may be transient.
	Reason string
	// Changed names, for an apply over an existing object, fields the
	// apply changes: the difference between the live object and the
	// locally computed result of the apply (at most a few, as paths: never
	// values). When the local apply could not be computed (no schema for
	// the kind), it names the desired fields live does not hold as
	// desired, compared untyped; it is empty when only managed fields
	// change.
	Changed []string
	// Live is the object after the apply: as the API server returned it
	// from the write, or the cached object when no write was sent; nil
	// when the apply failed.
	Live *unstructured.Unstructured
	// Before is the resourceVersion of the object the apply found, ""
	// when it found none (see afterApply).
	Before string
	// Drift names, for an apply over an existing object, the other field
	// managers whose changes of fields stencil sets it undoes, with those
	// fields (paths, never values): who changed the member since stencil
	// applied it. Empty when the changes are the render's own, or could
	// not be typed.
	Drift []Author
}

// Author is a field manager whose changes an apply undoes (see
// nochange.Author).
type Author = nochange.Author

// Applier applies objects with server-side apply: writer makes the writes
// (impersonating the Composition's ServiceAccount when it has one) and
// reads live, for the ownership test, an object the cache does not hold
// that turns out to exist; reader is the label-selected cache of members,
// used to skip writes that would change nothing.
type Applier struct {
	Writer client.Client
	Reader client.Reader
	ID     string // the ApplySet id members must carry
	// Record is the set's record of its members (see Owns): what the
	// Applier creates or adopts is added to it as soon as the API server
	// answers.
	Record *Record
	// Consent is what lets the set adopt an existing object of no set
	// (see Owns).
	Consent     Consent
	Concurrency int
	// Schemas compute the apply locally to skip writes that change nothing.
	Schemas *Schemas
	// Pace, when set, is waited on before a write whose only change is
	// an owner reference the member lacks (see pace).
	Pace func(context.Context) error
}

// Schemas type members for the local apply that skips writes changing
// nothing: the no-change decision of package nochange.
type Schemas = nochange.Schemas

// NewSchemas returns the Schemas deciding stencil's applies (as
// FieldManager), typing custom kinds from cluster's OpenAPI v3 (nil:
// built-in kinds only).
func NewSchemas(cluster openapi.Client) (*Schemas, error) {
	return nochange.NewSchemas(cluster, FieldManager)
}

// ApplyStage applies the objects of one stage concurrently, at most
// a.concurrency at a time, and returns one result per object, in order.
func (a *Applier) ApplyStage(ctx context.Context, objs []*unstructured.Unstructured) []ApplyResult {
	results := make([]ApplyResult, len(objs))
	sem := make(chan struct{}, max(a.Concurrency, 1))
	var wg sync.WaitGroup
	for i, u := range objs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = a.Apply(ctx, u)
		}()
	}
	wg.Wait()
	return results
}

// Apply applies one object, unless the cached live object shows it would
// change nothing. An object the member cache does not hold is created (see
// create); one that exists is applied over only when the ownership test
// (Owns) finds it a Member of this set or Adoptable: anything else is
// refused, with reason AdoptionRefused (or, for a member of another set,
// ApplyFailed), and left as it is. The UID of every object applied is
// added to a.Record (an object created, or adopted, becomes a member).
//
// Every write carries the precondition of the judgement it follows (see
// precondition): the object it was judged on, or none. A write the API
// server refuses because the object changed in between (deleted and made
// again by someone else, relabelled, or only its status moved) wrote
// nothing: the object is read again, live, as the writer, and judged
// again, at most maxJudgements times in all. Past that the apply fails
// with no Reason: transient, retried with backoff, never a stall.
func (a *Applier) Apply(ctx context.Context, desired *unstructured.Unstructured) ApplyResult {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	switch err := a.Reader.Get(ctx, client.ObjectKeyFromObject(desired), live); {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return ApplyResult{Object: desired}.fail(fmt.Errorf("read %s: %w", Ref(desired), Redact(desired, err)))
	}
	var res ApplyResult
	for range maxJudgements {
		var again bool
		if res, again = a.applyOver(ctx, desired, live); !again {
			return res
		}
		if live != nil {
			metrics.ApplyConflicts.Inc()
		}
		// The cache lags, or the object changed since it was read: read
		// it live, as the writer, and judge it again.
		var err error
		if live, err = a.readLive(ctx, desired); err != nil {
			return ApplyResult{Object: desired}.fail(fmt.Errorf("read %s: %w", Ref(desired), Redact(desired, err)))
		}
	}
	return res
}

// applyOver judges live, the object found (nil: none), and applies desired
// over it with the judgement as its precondition. again reports a write
// refused because the object is not the one judged: nothing was written,
// and res is a transient failure.
func (a *Applier) applyOver(ctx context.Context, desired, live *unstructured.Unstructured) (res ApplyResult, again bool) {
	if live == nil {
		return a.create(ctx, desired)
	}
	desired = settleOwners(desired, live)
	res = ApplyResult{Object: desired}
	switch Owns(live, desired.GroupVersionKind().GroupKind(), a.ID, a.Record, a.Consent) {
	case Foreign:
		res = res.fail(Refusal(Ref(desired), live, a.ID, a.Consent))
		res.Reason = v1alpha1.ReasonApplyFailed
		return res, false
	case NotOurs:
		res = res.fail(Refusal(Ref(desired), live, a.ID, a.Consent))
		res.Reason = v1alpha1.ReasonAdoptionRefused
		return res, false
	}
	if live.GetDeletionTimestamp() == nil {
		d := a.Schemas.Decide(ctx, a.Writer, desired, live)
		if !d.Write {
			res.UID, res.Action, res.Live, res.Before = live.GetUID(), Unchanged, live, live.GetResourceVersion()
			a.Record.Add(res.UID)
			return res, false
		}
		res.Changed, res.Drift = d.Changed, d.Authors
		if len(d.Changed) == 0 && d.Why != "" {
			log.FromContext(ctx).V(1).Info("applying: no local decision", "object", Ref(desired), "reason", d.Why)
			res.Changed = changedFields(desired.Object, live.Object, maxChangedFields)
		}
		if err := a.pace(ctx, desired, live); err != nil {
			return res.fail(err), false
		}
	}
	applied := desired.DeepCopy()
	precondition(applied, live)
	if err := a.Writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		res = res.fail(fmt.Errorf("apply %s: %w", Ref(desired), Redact(desired, err)))
		if stale(err) {
			return res, true
		}
		res.Reason = TerminalReason(err)
		return res, false
	}
	res.UID, res.Action, res.Live, res.Before = applied.GetUID(), Configured, applied, live.GetResourceVersion()
	a.Record.Add(res.UID)
	if live.GetResourceVersion() == applied.GetResourceVersion() {
		res.Action = Reapplied
	}
	a.Schemas.Applied(desired, applied)
	a.appliedCRD(applied, res.Action)
	return res, false
}

// createOnly is the resourceVersion create sends as a precondition. The
// API server treats a server-side apply that names a resourceVersion as an
// update of exactly that version, and an apply to an absent object as a
// create, which ignores it: so the apply creates an absent object and is
// refused with a Conflict by any existing one, whose resourceVersion is
// never "1" (etcd's first write is revision 2). The version is not a field
// any manager owns, and the created object gets its own.
const createOnly = "1"

// create applies an object no read found. Nearly always the object does
// not exist and this creates it, with no read before the write: the apply
// carries the createOnly precondition, so it can only create. If the
// object exists after all (the cache lags, or it is not labelled a
// member), the API server refuses the apply with a Conflict and nothing is
// written: again is true, and the caller reads the object live and asks
// the ownership test (Owns) whether it may be applied over.
func (a *Applier) create(ctx context.Context, desired *unstructured.Unstructured) (res ApplyResult, again bool) {
	res = ApplyResult{Object: desired}
	applied := desired.DeepCopy()
	precondition(applied, nil)
	err := a.Writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner(FieldManager))
	switch {
	case apierrors.IsConflict(err):
		return res.fail(fmt.Errorf("apply %s: %w", Ref(desired), Redact(desired, err))), true
	case err != nil:
		res = res.fail(fmt.Errorf("apply %s: %w", Ref(desired), Redact(desired, err)))
		res.Reason = TerminalReason(err)
		return res, false
	}
	res.UID, res.Action, res.Live = applied.GetUID(), Created, applied
	a.Record.Add(res.UID)
	a.Schemas.Applied(desired, applied)
	a.appliedCRD(applied, res.Action)
	return res, false
}

// readLive reads an object from the API server as the writer (nil when
// absent): what the ownership test decides on is what the writer itself
// may see. The writer must read unstructured objects live, as
// controller-runtime's default client does.
func (a *Applier) readLive(ctx context.Context, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	err := a.Writer.Get(ctx, client.ObjectKeyFromObject(desired), live)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return live, err
}

// appliedCRD forgets the schemas of a CRD's group once stencil changed it:
// its kinds are typed afresh.
func (a *Applier) appliedCRD(applied *unstructured.Unstructured, action Action) {
	if applied.GetKind() != "CustomResourceDefinition" || action == Reapplied {
		return
	}
	if group, _, _ := unstructured.NestedString(applied.Object, "spec", "group"); group != "" {
		a.Schemas.ForgetGroup(group)
	}
}

// ForeignMemberError reports a live object that is a member of another
// ApplySet: stencil refuses to take it over.
type ForeignMemberError struct {
	// Object names the object as Kind/namespace/name.
	Object string
	// ApplySet is the id of the set the live object belongs to.
	ApplySet string
}

func (e *ForeignMemberError) Error() string {
	return fmt.Sprintf("%s belongs to another ApplySet (%s): refusing to take it over", e.Object, e.ApplySet)
}

func (r ApplyResult) fail(err error) ApplyResult {
	r.Action, r.Err = Failed, err
	return r
}

// TerminalReason returns the condition reason of an apply error that no
// retry can fix, or "" when the error may be transient (a conflict, a
// timeout, a 5xx, a 429, a connection error) and is retried with backoff:
//
//   - Forbidden: RBAC, or an admission plugin such as a quota, refused the
//     write (looked at again after ForbiddenRecheck);
//   - Invalid, BadRequest: the API server rejects the object as rendered,
//     or cannot decode it (a 500 that says so, as for a Secret whose data
//     is not base64);
//   - RequestEntityTooLarge: the object is too large for the API server or
//     for etcd.
func TerminalReason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return v1alpha1.ReasonForbidden
	case apierrors.IsInvalid(err):
		return v1alpha1.ReasonInvalid
	case apierrors.IsBadRequest(err), undecodable(err):
		return v1alpha1.ReasonBadRequest
	case apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "request is too large"):
		return v1alpha1.ReasonTooLarge
	}
	return ""
}

// undecodable reports an internal error in which the API server says it
// could not decode or convert the object sent: the same object fails the
// same way every time.
func undecodable(err error) bool {
	if !apierrors.IsInternalError(err) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "failed to convert new object") || strings.Contains(msg, "error decoding from json")
}

// Redact keeps values out of errors. Any kind's validation error loses the
// values the API server quotes (see scrub): they may be a tenant's
// spec.values. A Secret's error is stricter, since the server may quote the
// invalid value, so a Secret's API error keeps only its reason (or, when
// the server gave none, one derived from the status code), its status
// code, the object's identity and the causes' field paths and types. Any
// other error about a Secret is reduced to a fixed sentence.
func Redact(u *unstructured.Unstructured, err error) error {
	if u.GetKind() != "Secret" || u.GroupVersionKind().Group != "" {
		return Scrub(err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return errors.New("request failed (details withheld for a Secret)")
	}
	s := status.Status()
	out := metav1.Status{Status: metav1.StatusFailure, Code: s.Code, Reason: s.Reason}
	if out.Reason == "" {
		out.Reason = reasonForCode(s.Code)
	}
	msg := fmt.Sprintf("%s (HTTP %d, details withheld for a Secret)", out.Reason, s.Code)
	if undecodable(err) {
		msg += ": the API server could not decode the object"
	}
	if s.Details != nil {
		out.Details = &metav1.StatusDetails{Name: s.Details.Name, Group: s.Details.Group, Kind: s.Details.Kind}
		for _, c := range s.Details.Causes {
			out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: c.Type, Field: c.Field})
			switch {
			case c.Field != "" && c.Type != "":
				msg += fmt.Sprintf("; %s: %s", c.Field, c.Type)
			case c.Field != "" || c.Type != "":
				msg += "; " + c.Field + string(c.Type)
			}
		}
	}
	out.Message = msg
	return &apierrors.StatusError{ErrStatus: out}
}

// reasonForCode names the reason of an HTTP status code, for API errors
// that carry none.
func reasonForCode(code int32) metav1.StatusReason {
	if code == http.StatusRequestEntityTooLarge {
		return metav1.StatusReasonRequestEntityTooLarge
	}
	if r := apierrors.NewGenericServerResponse(int(code), "", schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason; r != metav1.StatusReasonUnknown {
		return r
	}
	if code == 0 {
		return "Unknown"
	}
	return metav1.StatusReason("HTTP" + strconv.Itoa(int(code)))
}

// WaitEstablished waits, briefly, for the CRDs just applied to be Established
// so that the custom resources of later stages can be applied. It reports
// which are not Established yet; the reconcile then stops before the next
// stage and the CRD's own update event brings it back.
func WaitEstablished(ctx context.Context, reader client.Reader, crds []*unstructured.Unstructured) []string {
	var pending []string
	for _, crd := range crds {
		established := func(ctx context.Context) (bool, error) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(crd.GroupVersionKind())
			if err := reader.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
				return false, nil //nolint:nilerr // not readable yet is not Established yet: polled again until the wait ends
			}
			conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, established); err != nil {
			pending = append(pending, crd.GetName())
		}
	}
	return pending
}

// RelatedObject is a reference to a member, for the related object of an event.
func RelatedObject(gvk schema.GroupVersionKind, namespace, name string, uid types.UID) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}}
	o.SetGroupVersionKind(gvk)
	return o
}

// Related is the applied object as the related object of an event.
func (r ApplyResult) Related() *metav1.PartialObjectMetadata {
	return RelatedObject(r.Object.GroupVersionKind(), r.Object.GetNamespace(), r.Object.GetName(), r.UID)
}

// Failures returns the failed results of results.
func Failures(results []ApplyResult) []ApplyResult {
	return slices.DeleteFunc(slices.Clone(results), func(r ApplyResult) bool { return r.Action != Failed })
}
