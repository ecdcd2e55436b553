package reconcile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helm's annotations that stencil honours, and the one it adds to hooks.
// The README's "Helm hooks" section says what each does and where stencil
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
	// applies: the revision of the inputs (see hookRevision) the hook runs
	// for. A live hook of another revision is replaced when its hook point
	// runs again.
	AnnotationHookRevision = "stencil.dev/hook-revision"
)

// Hook events: which pair of hook points a revision runs.
const (
	hookEventInstall = "install"
	hookEventUpgrade = "upgrade"
)

// Results of a hook that ran to an end, as recorded in status.hooks.
const (
	hookSucceeded = "Succeeded"
	hookFailed    = "Failed"
)

// Helm's delete policies.
const (
	policyBeforeCreation = "before-hook-creation"
	policySucceeded      = "hook-succeeded"
	policyFailed         = "hook-failed"
)

// runnableHookPoints are the hook points stencil runs.
var runnableHookPoints = []string{"pre-install", "pre-upgrade", "post-install", "post-upgrade"}

// hookPoints parses helm.sh/hook as Helm does (comma-separated, trimmed,
// lower-cased); ok is false for an object that is not a hook.
func hookPoints(u metav1.Object) (points []string, ok bool) {
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

// isHook reports whether an object is a Helm hook.
func isHook(u metav1.Object) bool {
	_, ok := u.GetAnnotations()[AnnotationHook]
	return ok
}

// filterHooks drops the rendered objects stencil never applies: Helm test
// hooks (helm.sh/hook: test, test-success, test-failure, any test*) and
// hooks of no point stencil runs (pre-delete, post-delete, pre-rollback,
// post-rollback, or none it knows). A hook that also names pre-/post-
// install or -upgrade is kept. `stencil render` shows what is left.
func filterHooks(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return slices.DeleteFunc(objs, func(u *unstructured.Unstructured) bool {
		points, ok := hookPoints(u)
		return ok && !slices.ContainsFunc(points, func(p string) bool { return slices.Contains(runnableHookPoints, p) })
	})
}

// hookWeight is helm.sh/hook-weight as an integer, 0 when absent or not one.
func hookWeight(u metav1.Object) int {
	w, err := strconv.Atoi(strings.TrimSpace(u.GetAnnotations()[AnnotationHookWeight]))
	if err != nil {
		return 0
	}
	return w
}

// hookPointFor returns the hook point at which u runs for event, and
// whether it runs before (pre) the ordinary members; ok is false when u
// does not run for event. A hook naming both pre- and post- runs before.
func hookPointFor(u metav1.Object, event string) (point string, pre, ok bool) {
	points, _ := hookPoints(u)
	switch {
	case slices.Contains(points, "pre-"+event):
		return "pre-" + event, true, true
	case slices.Contains(points, "post-"+event):
		return "post-" + event, false, true
	}
	return "", false, false
}

// deletePolicies returns helm.sh/hook-delete-policy as a list.
func deletePolicies(u metav1.Object) []string {
	var out []string
	for _, p := range strings.Split(u.GetAnnotations()[AnnotationHookDeletePolicy], ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// kept reports whether an object is annotated helm.sh/resource-policy: keep.
func kept(o metav1.Object) bool {
	return strings.ToLower(strings.TrimSpace(o.GetAnnotations()[AnnotationResourcePolicy])) == "keep"
}

// hookRevision is the revision of a Composition's inputs that hooks run
// once for: its generation and the Bundle's revision.
func hookRevision(comp Parent, bundleRevision string) string {
	return fmt.Sprintf("%d/%s", comp.GetGeneration(), bundleRevision)
}

// ordinaryObjects returns the objects of a plan that are not hooks.
func ordinaryObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	return slices.DeleteFunc(slices.Clone(objs), func(u *unstructured.Unstructured) bool { return isHook(u) })
}

// hookOutcome is what a live hook object says of its run.
type hookOutcome int

const (
	hookRunning hookOutcome = iota
	hookDone
	hookBroken
)

// outcomeOf reads a live hook: a Job until condition Complete (or Failed)
// is True; a Pod until phase Succeeded (or Failed); any other kind until
// its kstatus is Current (or Failed). msg explains a failure or a wait.
func outcomeOf(live *unstructured.Unstructured) (hookOutcome, string) {
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
				return hookDone, ""
			case "Failed":
				reason, _ := m["reason"].(string)
				return hookBroken, strings.TrimSpace(reason + ": " + msg)
			}
		}
		return hookRunning, "Job not Complete yet"
	case gvk.Group == "" && gvk.Kind == "Pod":
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch phase {
		case "Succeeded":
			return hookDone, ""
		case "Failed":
			msg, _, _ := unstructured.NestedString(live.Object, "status", "message")
			return hookBroken, strings.TrimSpace("Pod phase Failed " + msg)
		}
		return hookRunning, "Pod phase " + phase
	}
	res, err := status.Compute(live)
	switch {
	case err != nil:
		return hookRunning, err.Error()
	case res.Status == status.CurrentStatus:
		return hookDone, ""
	case res.Status == status.FailedStatus:
		return hookBroken, res.Message
	}
	return hookRunning, res.Status.String() + ": " + res.Message
}
