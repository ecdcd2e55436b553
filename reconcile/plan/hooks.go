package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Helm's annotations that stencil honours, and the one it adds to hooks.
// docs/helm.md's "Helm hooks" section says what each does and where stencil
// differs from Helm.
const (
	// AnnotationHook makes an object a Helm hook: a comma-separated list of
	// hook points (pre-install, pre-upgrade, post-install, post-upgrade run;
	// test hooks, pre/post-delete and pre/post-rollback are never applied).
	AnnotationHook = "helm.sh/hook"
	// AnnotationHookWeight orders the hooks of one hook point, lowest first
	// (an integer; anything else counts as 0, as in Helm).
	AnnotationHookWeight = "helm.sh/hook-weight"
	// AnnotationHookDeletePolicy lists when a hook object is deleted:
	// before-hook-creation, hook-succeeded, hook-failed.
	AnnotationHookDeletePolicy = "helm.sh/hook-delete-policy"
	// AnnotationResourcePolicy "keep" spares an object from prune and from
	// deletion with its Composition: it is orphaned instead (it loses the
	// ApplySet part-of label and is left in place).
	AnnotationResourcePolicy = "helm.sh/resource-policy"
	// AnnotationHookRevision is written by stencil on every hook it
	// applies: the revision of the inputs (see HookRevision) the hook runs
	// for. A live hook of another revision is replaced when its hook point
	// runs again.
	AnnotationHookRevision = "stencil.dev/hook-revision"
)

// Hook events: which pair of hook points a revision runs.
const (
	HookEventInstall = "install"
	HookEventUpgrade = "upgrade"
)

// Results of a hook that ran to an end, as recorded in status.hooks.
const (
	HookSucceeded = "Succeeded"
	HookFailed    = "Failed"
)

// Helm's delete policies.
const (
	PolicyBeforeCreation = "before-hook-creation"
	PolicySucceeded      = "hook-succeeded"
	PolicyFailed         = "hook-failed"
)

// RunnableHookPoints are the hook points stencil runs.
var RunnableHookPoints = []string{"pre-install", "pre-upgrade", "post-install", "post-upgrade"}

// HookPoints parses helm.sh/hook as Helm does (comma-separated, trimmed,
// lower-cased); ok is false for an object that is not a hook.
func HookPoints(u metav1.Object) (points []string, ok bool) {
	v, ok := u.GetAnnotations()[AnnotationHook]
	if !ok {
		return nil, false
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			points = append(points, p)
		}
	}
	return points, true
}

// IsHook reports whether an object is a Helm hook.
func IsHook(u metav1.Object) bool {
	_, ok := u.GetAnnotations()[AnnotationHook]
	return ok
}

// FilterHooks drops the rendered objects stencil never applies: Helm test
// hooks (helm.sh/hook: test, test-success, test-failure, any test*) and
// hooks of no point stencil runs (pre-delete, post-delete, pre-rollback,
// post-rollback, or none it knows). A hook that also names pre-/post-
// install or -upgrade is Kept. `stencil render` shows what is left.
func FilterHooks(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return slices.DeleteFunc(objs, func(u *unstructured.Unstructured) bool {
		points, ok := HookPoints(u)
		return ok && !slices.ContainsFunc(points, func(p string) bool { return slices.Contains(RunnableHookPoints, p) })
	})
}

// HookWeight is helm.sh/hook-weight as an integer, 0 when absent or not one.
func HookWeight(u metav1.Object) int {
	w, err := strconv.Atoi(strings.TrimSpace(u.GetAnnotations()[AnnotationHookWeight]))
	if err != nil {
		return 0
	}
	return w
}

// HookPointFor returns the hook point at which u runs for event, and
// whether it runs before (pre) the ordinary members; ok is false when u
// does not run for event. A hook naming both pre- and post- runs before.
func HookPointFor(u metav1.Object, event string) (point string, pre, ok bool) {
	points, _ := HookPoints(u)
	switch {
	case slices.Contains(points, "pre-"+event):
		return "pre-" + event, true, true
	case slices.Contains(points, "post-"+event):
		return "post-" + event, false, true
	}
	return "", false, false
}

// DeletePolicies returns helm.sh/hook-delete-policy as a list.
func DeletePolicies(u metav1.Object) []string {
	var out []string
	for _, p := range strings.Split(u.GetAnnotations()[AnnotationHookDeletePolicy], ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Kept reports whether an object is annotated helm.sh/resource-policy: keep.
func Kept(o metav1.Object) bool {
	return strings.ToLower(strings.TrimSpace(o.GetAnnotations()[AnnotationResourcePolicy])) == "keep"
}

// HookRevision is the revision of a Composition's inputs that hooks run
// once for: its generation and the Bundle's revision.
func HookRevision(comp applyset.Parent, bundleRevision string) string {
	return fmt.Sprintf("%d/%s", comp.GetGeneration(), bundleRevision)
}

// OrdinaryObjects returns the objects of a plan that are not hooks, nor
// the store of its generated values.
func OrdinaryObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objs), func(u *unstructured.Unstructured) bool {
		return IsHook(u) || u.GetAnnotations()[AnnotationGeneratedStore] == "true"
	})
}

// AnnotationGeneratedStore marks the store of a set's generated values
// (package reconcile/valuestore): a member the pass applies first, on its
// own, and does not report in the parent's status.
const AnnotationGeneratedStore = "stencil.dev/generated-values"

// HookOutcome is what a live hook object says of its run.
type HookOutcome int

const (
	HookRunning HookOutcome = iota
	HookDone
	HookBroken
)

// OutcomeOf reads a live hook: a Job until condition Complete (or Failed)
// is True; a Pod until phase Succeeded (or Failed); any other kind until
// its kstatus is Current (or Failed). msg explains a failure or a wait.
func OutcomeOf(live *unstructured.Unstructured) (HookOutcome, string) {
	gvk := live.GroupVersionKind()
	switch {
	case gvk.Group == "batch" && gvk.Kind == "Job":
		conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			msg, _ := m["message"].(string)
			switch m["type"] {
			case "Complete":
				return HookDone, ""
			case "Failed":
				reason, _ := m["reason"].(string)
				return HookBroken, strings.TrimSpace(reason + ": " + msg)
			}
		}
		return HookRunning, "Job not Complete yet"
	case gvk.Group == "" && gvk.Kind == "Pod":
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return HookDone, ""
		case "Failed":
			msg, _, _ := unstructured.NestedString(live.Object, "status", "message")
			return HookBroken, strings.TrimSpace("Pod phase Failed " + msg)
		}
		return HookRunning, "Pod phase " + phase
	}
	res, err := status.Compute(live)
	switch {
	case err != nil:
		return HookRunning, err.Error()
	case res.Status == status.CurrentStatus:
		return HookDone, ""
	case res.Status == status.FailedStatus:
		return HookBroken, res.Message
	}
	return HookRunning, res.Status.String() + ": " + res.Message
}
