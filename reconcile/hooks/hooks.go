package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// Runner runs the Helm hooks of passes. It is shared by the reconcilers
// of every kind of parent.
type Runner struct {
	// Live reads hooks and parents from the API server: the cache may lag
	// behind a hook's last change, and a stale read would re-run or skip
	// a hook.
	Live client.Reader
	// Client writes the hook record to the parent's status.
	Client client.Client
	// Recorder records the hooks' events on the parent.
	Recorder events.EventRecorder
}

// Pass is what a run of hooks takes from, and gives back to, its pass.
type Pass struct {
	// Parent is the parent whose hooks run; Status the status the pass
	// builds, whose Hooks is the record.
	Parent applyset.Parent
	Status *v1alpha1.CompositionStatus
	// Objects are the planned objects, hooks among them; BundleRevision
	// the revision rendered.
	Objects        []*unstructured.Unstructured
	BundleRevision string
	// Upgrade is .Release.IsUpgrade of the pass's render: hooks run for
	// the event the templates saw.
	Upgrade bool
	// Applier applies hooks; Pruner deletes them.
	Applier *applyset.Applier
	// Reader reads hooks live as the writer (the parent's ServiceAccount,
	// or the controller when it writes as itself), so what a hook finds
	// is what its writer may read; nil reads through Runner.Live.
	Reader client.Reader
	Pruner *applyset.Pruner
	// Applied takes the result of each hook's apply.
	Applied func(applyset.ApplyResult)
	// Stall stalls the pass for good; End ends it after the current
	// phase, with status already set.
	Stall func(reason, message string)
	End   func()
	// Written takes the parent's resourceVersion after the record is written.
	Written func(resourceVersion string)
}

// Run is the run of hooks of one pass. Its record is Status.Hooks: the
// revision, the event (install or upgrade, fixed when the revision's first
// hook runs) and every hook that ran to an end, so a hook deleted by its
// policy is not run again for the same revision.
type Run struct {
	r   *Runner
	p   Pass
	rev string
	// Pre and Post are the hooks that run for the event, in apply order.
	Pre, Post []*unstructured.Unstructured
	// confirmed: the record was read from the API server this pass.
	confirmed bool
}

// Start selects the hooks of the plan that run for this revision's
// event. The record is carried in status; when it names another revision
// (or none), the parent is read live once, since the cache may not hold
// the record this controller wrote last.
func (r *Runner) Start(ctx context.Context, p Pass) (*Run, error) {
	h := &Run{r: r, p: p, rev: plan.HookRevision(p.Parent, p.BundleRevision)}
	if !slices.ContainsFunc(p.Objects, func(u *unstructured.Unstructured) bool { return plan.IsHook(u) }) {
		p.Status.Hooks = nil
		return h, nil
	}
	if rec := p.Status.Hooks; rec == nil || rec.Revision != h.rev {
		if err := h.confirm(ctx); err != nil {
			return nil, err
		}
	}
	for _, u := range p.Objects {
		if _, pre, ok := plan.HookPointFor(u, p.Status.Hooks.Event); ok && pre {
			h.Pre = append(h.Pre, u)
		} else if ok {
			h.Post = append(h.Post, u)
		}
	}
	// A hook's section in the plan (pre or post) may differ from its role
	// for this event (pre-install,post-upgrade): order each list by weight
	// and kind alone.
	byWeight := func(a, b *unstructured.Unstructured) int {
		return plan.CompareStageKeys([3]int{0, plan.HookWeight(a), plan.KindRank(a.GetKind())}, [3]int{0, plan.HookWeight(b), plan.KindRank(b.GetKind())})
	}
	slices.SortStableFunc(h.Pre, byWeight)
	slices.SortStableFunc(h.Post, byWeight)
	return h, nil
}

// confirm reads the parent's hook record from the API server and
// starts a new record for this revision when it names another. A new
// revision is an install when the parent was never applied (as
// .Release.IsUpgrade is false), an upgrade otherwise.
func (h *Run) confirm(ctx context.Context) error {
	if h.confirmed {
		return nil
	}
	live, err := applyset.Reread(ctx, h.r.Live, h.p.Parent)
	if err != nil {
		return fmt.Errorf("read the hook record of %s: %w", applyset.Describe(h.p.Parent), err)
	}
	h.confirmed = true
	if rec := live.ParentStatus().Hooks; rec != nil && rec.Revision == h.rev {
		merged := rec.DeepCopy()
		if mine := h.p.Status.Hooks; mine != nil && mine.Revision == h.rev {
			for _, c := range mine.Completed {
				if !slices.ContainsFunc(merged.Completed, func(o v1alpha1.HookRecord) bool { return sameHook(o, c) }) {
					merged.Completed = append(merged.Completed, c)
				}
			}
		}
		h.p.Status.Hooks = merged
		return nil
	}
	if rec := h.p.Status.Hooks; rec != nil && rec.Revision == h.rev {
		return nil
	}
	event := plan.HookEventInstall
	if h.p.Upgrade {
		event = plan.HookEventUpgrade
	}
	h.p.Status.Hooks = &v1alpha1.HooksStatus{Revision: h.rev, Event: event}
	return nil
}

// recorded returns the record of a hook that ran to an end this revision.
func (h *Run) recorded(u *unstructured.Unstructured) *v1alpha1.HookRecord {
	return recordOf(h.p.Status.Hooks, u)
}

// recordOf returns rec's record of the hook u, nil when u has none.
func recordOf(rec *v1alpha1.HooksStatus, u *unstructured.Unstructured) *v1alpha1.HookRecord {
	if rec == nil {
		return nil
	}
	gvk := u.GroupVersionKind()
	key := v1alpha1.HookRecord{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	for i, c := range rec.Completed {
		if sameHook(c, key) {
			return &rec.Completed[i]
		}
	}
	return nil
}

// Pending names the post- hooks among objects of the event of rec that
// have not succeeded yet: until they have, the parent is not Ready.
func Pending(rec *v1alpha1.HooksStatus, objects []*unstructured.Unstructured) []string {
	if rec == nil {
		return nil
	}
	var out []string
	for _, u := range objects {
		if point, pre, ok := plan.HookPointFor(u, rec.Event); ok && !pre {
			if r := recordOf(rec, u); r == nil || r.Result != plan.HookSucceeded {
				out = append(out, point+" hook "+applyset.Ref(u))
			}
		}
	}
	return out
}

// sameHook reports whether two records name the same object.
func sameHook(a, b v1alpha1.HookRecord) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// stageResult is what running one stage of hooks came to.
type stageResult struct {
	waiting     []string // hooks not finished, with why
	failed      []string // hooks that failed, with why
	refused     []string // existing objects of hooks' names that are not ours
	applyFailed bool     // an apply failed (reported by observe)
}

// Stages runs hooks stage by stage (by weight, then kind), each stage only
// when the previous one succeeded. It reports whether every hook
// succeeded. A failed hook stalls the parent (v1alpha1.ReasonHookFailed); a
// hook still running sets Reconciling naming it, and, when gate is true
// (pre- hooks), ends the pass: the hook's own events bring the next one.
func (h *Run) Stages(ctx context.Context, hooks []*unstructured.Unstructured, gate bool) (bool, error) {
	for _, stage := range plan.Stages(hooks) {
		var res stageResult
		for _, u := range stage {
			if err := h.step(ctx, u, &res); err != nil {
				return false, err
			}
		}
		switch {
		case len(res.refused) > 0:
			h.p.Stall(v1alpha1.ReasonAdoptionRefused, strings.Join(res.refused, "; "))
			return false, nil
		case res.applyFailed:
			return false, nil
		case len(res.failed) > 0:
			if err := h.persist(ctx); err != nil {
				return false, err
			}
			h.p.Stall(v1alpha1.ReasonHookFailed, strings.Join(res.failed, "; "))
			return false, nil
		case len(res.waiting) > 0:
			status.SetReconciling(h.p.Status, h.p.Parent.GetGeneration(), v1alpha1.ReasonProgressing, "waiting for hooks: "+strings.Join(res.waiting, "; "))
			if gate {
				h.p.End()
			}
			return false, nil
		}
	}
	return true, nil
}

// step moves one hook on: a hook recorded for this revision is left alone;
// a live hook of this revision is read for its outcome; one of an earlier
// revision is replaced once it has finished; a missing one is applied.
func (h *Run) step(ctx context.Context, u *unstructured.Unstructured, res *stageResult) error {
	point, _, _ := plan.HookPointFor(u, h.p.Status.Hooks.Event)
	name := point + " hook " + applyset.Ref(u)
	if rec := h.recorded(u); rec != nil {
		if rec.Result == plan.HookFailed {
			res.failed = append(res.failed, name+" failed: "+rec.Message)
		}
		return nil
	}
	live, err := h.get(ctx, u)
	if err != nil {
		return err
	}
	if live != nil {
		if err := h.owned(live); err != nil {
			// Another object of the hook's name: never replaced or deleted.
			res.refused = append(res.refused, name+": "+err.Error())
			return nil //nolint:nilerr // a refusal is reported in res.refused, not a failure of the pass
		}
	}
	if live == nil {
		// Absent: not created yet, or deleted by its policy after a run
		// whose record this pass may not have seen yet.
		if err := h.confirm(ctx); err != nil {
			return err
		}
		if h.recorded(u) != nil {
			return h.step(ctx, u, res)
		}
		if live, err = h.create(ctx, u); err != nil {
			return err
		}
		if live == nil {
			res.applyFailed = true
			return nil
		}
	}
	if live.GetDeletionTimestamp() != nil || live.GetAnnotations()[plan.AnnotationHookRevision] != h.rev {
		return h.replace(ctx, name, live, res)
	}
	outcome, msg := plan.OutcomeOf(live)
	switch outcome {
	case plan.HookRunning:
		res.waiting = append(res.waiting, name+": "+msg)
		return nil
	case plan.HookBroken:
		res.failed = append(res.failed, name+" failed: "+msg)
		return h.finish(ctx, u, live, point, plan.HookFailed, msg, plan.PolicyFailed)
	}
	return h.finish(ctx, u, live, point, plan.HookSucceeded, "", plan.PolicySucceeded)
}

// get reads a hook live from the API server (nil when absent): the cache
// may lag behind the hook's last change, and a stale read would re-run or
// skip a hook.
func (h *Run) get(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	reader := h.p.Reader
	if reader == nil {
		reader = h.r.Live
	}
	err := reader.Get(ctx, client.ObjectKeyFromObject(u), live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read hook %s: %w", applyset.Ref(u), err)
	}
	return live, nil
}

// create applies a hook, stamped with the revision it runs for, and reads
// it back. A failed apply is reported like any other (nil, nil).
func (h *Run) create(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	desired := u.DeepCopy()
	ann := desired.GetAnnotations()
	ann[plan.AnnotationHookRevision] = h.rev
	desired.SetAnnotations(ann)
	result := h.p.Applier.Apply(ctx, desired)
	h.p.Applied(result)
	if result.Action == applyset.Failed {
		return nil, nil
	}
	live, err := h.get(ctx, u)
	if err == nil && live == nil {
		err = fmt.Errorf("hook %s is gone right after it was applied", applyset.Ref(u))
	}
	return live, err
}

// replace deletes a hook left from an earlier revision (Helm's
// before-hook-creation, which stencil always applies: re-creating a hook
// object under the same name is the only way to run it again) once it has
// finished: a hook still running is waited on, never cut short.
func (h *Run) replace(ctx context.Context, name string, live *unstructured.Unstructured, res *stageResult) error {
	if live.GetDeletionTimestamp() != nil {
		res.waiting = append(res.waiting, name+": the hook of an earlier revision is being deleted")
		return nil
	}
	if outcome, msg := plan.OutcomeOf(live); outcome == plan.HookRunning {
		res.waiting = append(res.waiting, name+": the hook of an earlier revision is still running ("+msg+")")
		return nil
	}
	if err := h.delete(ctx, live); err != nil {
		return err
	}
	res.waiting = append(res.waiting, name+": replacing the hook of an earlier revision")
	return nil
}

// finish records a hook that ran to an end and, when its delete policy
// asks (policy: hook-succeeded or hook-failed), deletes it: the record is
// written first, so a crash in between never runs the hook again.
func (h *Run) finish(ctx context.Context, u, live *unstructured.Unstructured, point, result, msg, policy string) error {
	gvk := u.GroupVersionKind()
	h.p.Status.Hooks.Completed = append(h.p.Status.Hooks.Completed, v1alpha1.HookRecord{
		Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(),
		Hook: point, Result: result, Message: msg,
	})
	typ := "Normal"
	if result == plan.HookFailed {
		typ = "Warning"
	}
	h.r.Recorder.Eventf(h.p.Parent, live, typ, "Hook"+result, "Hook", "%s hook %s %s", point, applyset.Ref(u), strings.ToLower(result))
	if !slices.Contains(plan.DeletePolicies(live), policy) {
		return nil
	}
	if err := h.persist(ctx); err != nil {
		return err
	}
	return h.delete(ctx, live)
}

// owned asks the ownership test (applyset.Owns) about a live object of a
// hook's name: only a member of this set (a hook stencil applied, which
// the set's record names), or an object that consents to adoption, is
// replaced or deleted. The error names the object, never its content.
func (h *Run) owned(live *unstructured.Unstructured) error {
	a := h.p.Applier
	switch applyset.Owns(live, live.GroupVersionKind().GroupKind(), a.ID, a.Record, a.Consent) {
	case applyset.Ours, applyset.Adoptable:
		return nil
	}
	return applyset.Refusal(applyset.Ref(live), live, a.ID, a.Consent)
}

// delete deletes a hook object with a UID precondition, once the ownership
// test allows it (see owned).
func (h *Run) delete(ctx context.Context, live *unstructured.Unstructured) error {
	if err := h.owned(live); err != nil {
		return fmt.Errorf("delete hook: %w", err)
	}
	m := applyset.Member{GVK: live.GroupVersionKind()}
	m.Meta.SetNamespace(live.GetNamespace())
	m.Meta.SetName(live.GetName())
	m.Meta.SetUID(live.GetUID())
	if _, err := h.p.Pruner.DeleteMember(ctx, m); err != nil {
		return fmt.Errorf("delete hook: %w", err)
	}
	h.r.Recorder.Eventf(h.p.Parent, m.Related(), "Normal", "HookDeleted", "Hook", "%s deleted", m.Ref())
	return nil
}

// persist writes the hook record to the parent's status at once, before
// the hook is deleted or the pass stalls on it: a crash in between never
// runs the hook again. It is the one status write besides the pass's own
// (package reconcile), and, like it, hands on the version it wrote.
func (h *Run) persist(ctx context.Context) error {
	if equality.Semantic.DeepEqual(h.p.Parent.ParentStatus().Hooks, h.p.Status.Hooks) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"hooks": h.p.Status.Hooks}})
	if err != nil {
		return fmt.Errorf("record the hooks of %s: %w", applyset.Describe(h.p.Parent), err)
	}
	written := h.p.Parent.DeepCopyObject().(client.Object)
	if err := h.r.Client.Status().Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("record the hooks of %s: %w", applyset.Describe(h.p.Parent), err)
	}
	h.p.Parent.ParentStatus().Hooks = h.p.Status.Hooks.DeepCopy()
	h.p.Written(written.GetResourceVersion())
	return nil
}
