package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hook returns an object annotated as a Helm hook.
func hook(kind, name, points string, annotations ...string) *unstructured.Unstructured {
	u := obj(kind, name)
	ann := map[string]string{AnnotationHook: points}
	for i := 0; i+1 < len(annotations); i += 2 {
		ann[annotations[i]] = annotations[i+1]
	}
	u.SetAnnotations(ann)
	return u
}

func TestFilterHooks(t *testing.T) {
	objs := []*unstructured.Unstructured{
		obj("Deployment", "app"),
		hook("Pod", "test", "test"),
		hook("Pod", "test-success", "test-success"),
		hook("Pod", "test-failure", " Test-Failure "),
		hook("Job", "cleanup", "pre-delete"),
		hook("Job", "rollback", "pre-rollback,post-rollback"),
		hook("Job", "empty", ""),
		hook("Job", "migrate", "pre-install, pre-upgrade"),
		hook("Job", "both", "post-delete,post-install"),
		hook("ConfigMap", "upper", "PRE-UPGRADE"),
	}
	got := names(FilterHooks(objs))
	want := []string{"Deployment/app", "Job/migrate", "Job/both", "ConfigMap/upper"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kept objects (-want +got):\n%s", diff)
	}
}

func TestHookPointFor(t *testing.T) {
	for _, tc := range []struct {
		points, event string
		point         string
		pre, ok       bool
	}{
		{"pre-install,pre-upgrade", "install", "pre-install", true, true},
		{"pre-install,pre-upgrade", "upgrade", "pre-upgrade", true, true},
		{"post-install", "install", "post-install", false, true},
		{"post-install", "upgrade", "", false, false},
		{"pre-install,post-install", "install", "pre-install", true, true},
		{" Post-Upgrade ", "upgrade", "post-upgrade", false, true},
	} {
		point, pre, ok := HookPointFor(hook("Job", "j", tc.points), tc.event)
		if point != tc.point || pre != tc.pre || ok != tc.ok {
			t.Errorf("HookPointFor(%q, %s) = %q, %v, %v; want %q, %v, %v", tc.points, tc.event, point, pre, ok, tc.point, tc.pre, tc.ok)
		}
	}
}

// TestSortForApplyHooks: hooks follow every ordinary object, those that
// run before (pre-) first, then lowest weight first (a weight that is not
// an integer counts as 0, as in Helm), then by kind; each is its own stage.
func TestSortForApplyHooks(t *testing.T) {
	objs := []*unstructured.Unstructured{
		hook("Job", "migrate", "pre-install"),
		obj("Deployment", "app"),
		hook("ConfigMap", "late", "post-install", AnnotationHookWeight, "10"),
		hook("ServiceAccount", "migrate", "pre-install", AnnotationHookWeight, "-5"),
		hook("ConfigMap", "bad-weight", "pre-install", AnnotationHookWeight, "x"),
		obj("ConfigMap", "cfg"),
		hook("ConfigMap", "early-post", "post-upgrade", AnnotationHookWeight, "-10"),
	}
	SortForApply(objs)
	want := []string{"ConfigMap/cfg", "Deployment/app", "ServiceAccount/migrate", "ConfigMap/bad-weight", "Job/migrate", "ConfigMap/early-post", "ConfigMap/late"}
	if diff := cmp.Diff(want, names(objs)); diff != "" {
		t.Errorf("apply order (-want +got):\n%s", diff)
	}
	var got [][]string
	for _, s := range Stages(objs[2:]) {
		got = append(got, names(s))
	}
	wantStages := [][]string{{"ServiceAccount/migrate"}, {"ConfigMap/bad-weight"}, {"Job/migrate"}, {"ConfigMap/early-post"}, {"ConfigMap/late"}}
	if diff := cmp.Diff(wantStages, got); diff != "" {
		t.Errorf("hook Stages (-want +got):\n%s", diff)
	}
}

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  string
		want HookOutcome
	}{
		{"job running", `{"apiVersion":"batch/v1","kind":"Job","status":{"active":1}}`, HookRunning},
		{"job complete", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}`, HookDone},
		{"job success criteria only", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"SuccessCriteriaMet","status":"True"}]}}`, HookRunning},
		{"job failed", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}}`, HookBroken},
		{"job complete false", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Complete","status":"False"}]}}`, HookRunning},
		{"pod running", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, HookRunning},
		{"pod succeeded", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Succeeded"}}`, HookDone},
		{"pod failed", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Failed"}}`, HookBroken},
		{"configmap", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, HookDone},
		{"custom resource stalled", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"generation":1},"status":{"observedGeneration":1,"conditions":[{"type":"Stalled","status":"True"}]}}`, HookBroken},
		{"custom resource reconciling", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"generation":2},"status":{"observedGeneration":1}}`, HookRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(tc.obj)); err != nil {
				t.Fatal(err)
			}
			if got, msg := OutcomeOf(u); got != tc.want {
				t.Errorf("outcome = %d (%s), want %d", got, msg, tc.want)
			}
		})
	}
}

func TestKept(t *testing.T) {
	for v, want := range map[string]bool{"keep": true, " Keep ": true, "": false, "delete": false} {
		u := obj("ConfigMap", "c")
		u.SetAnnotations(map[string]string{AnnotationResourcePolicy: v})
		if Kept(u) != want {
			t.Errorf("Kept(%q) = %v, want %v", v, !want, want)
		}
	}
}
