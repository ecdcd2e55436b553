package hooks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// hookedApp is a chart's usual shape: a migration Job run before install
// and upgrade (deleted once it succeeded, or per policy), a ConfigMap the
// Job needs (weight -5, so before it), the app's Deployment, ConfigMaps
// marking the install and the upgrade done (post-install, post-upgrade),
// and a test Pod.
func hookedApp(policy string) map[string]string {
	return map[string]string{
		"values.yaml": "image: nginx:1.27\n",
		"templates/job.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: pre-install, pre-upgrade
    helm.sh/hook-delete-policy: ` + policy + `
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: {{ .Values.image }}
`,
		"templates/hook-config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: migrate-config
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
data:
  image: {{ .Values.image }}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
`,
		"templates/installed.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: installed
  annotations:
    helm.sh/hook: post-install
data:
  image: {{ .Values.image }}
`,
		"templates/upgraded.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: upgraded
  annotations:
    helm.sh/hook: post-upgrade
data:
  image: {{ .Values.image }}
`,
		"templates/tests/smoke.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: smoke
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
  - name: smoke
    image: busybox
`,
	}
}

// finishJob writes a Job's status as the Job controller would when it
// completes (or fails): envtest runs no kube-controller-manager. It is
// written over the Job as it then is, again on a conflict.
func finishJob(t *testing.T, job *batchv1.Job, succeeded bool) {
	t.Helper()
	testenv.UpdateStatus(t, env.Client, job, func() {
		start := metav1.NewTime(time.Now().Add(-time.Minute))
		now := metav1.Now()
		job.Status.StartTime = &start
		if succeeded {
			job.Status.Succeeded = 1
			job.Status.CompletionTime = &now
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			}
		} else {
			job.Status.Failed = 1
			job.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
			}
		}
	})
}

func job(ns, name string) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// TestPreInstallHookGatesMembers: a pre-install Job is applied (after the
// lower-weight hook ConfigMap) before anything else and waited on; the
// Deployment is applied only once the Job is Complete; hook-succeeded then
// deletes the Job, and later passes of the same revision neither re-create
// it nor report it. The post-install hook waits for the Deployment to be
// Current and holds Ready until it is done; the test Pod is never applied.
// A new revision is an upgrade: the pre-upgrade hook runs once more, the
// post-install hook does not, and the post-upgrade hook waits for the
// upgraded Deployment.
func TestPreInstallHookGatesMembers(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "hooks-"+ns, hookedApp("hook-succeeded"))
	comp := suite.Composition(ns, "app", b.Name, "")
	env.MustCreate(t, comp)

	dep := installGatedByHooks(t, ns)
	installDoneStaysDone(t, ns, dep)
	upgradeRunsUpgradeHooks(t, comp, dep)
}

// installGatedByHooks follows the install of Composition app in ns, of
// hookedApp("hook-succeeded"): the pre-install Job (and its ConfigMap)
// first, the Deployment once the Job is Complete, the post-install hook
// once the Deployment is Current. It returns the Deployment.
func installGatedByHooks(t *testing.T, ns string) *appsv1.Deployment {
	t.Helper()
	migrate := job(ns, "migrate")
	env.Exists(t, migrate)
	if got := migrate.Annotations[plan.AnnotationHookRevision]; !strings.HasPrefix(got, "1/") {
		t.Errorf("hook revision annotation = %q, want generation 1", got)
	}
	env.Exists(t, configMap(ns, "migrate-config"))
	testenv.Consistently(t, 2*time.Second, "the Deployment waits for the pre-install Job", func() (bool, error) {
		return env.Absent(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	})
	// The pass that applied the Job ends with a status naming it: wait
	// for that status, not the first one seen.
	env.CompositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reasons: []string{v1alpha1.ReasonProgressing}, Message: testenv.Says("pre-install hook Job/" + ns + "/migrate")})

	finishJob(t, migrate, true)
	env.Gone(t, job(ns, "migrate"))
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	env.Exists(t, dep)
	if ok, err := env.Absent(configMap(ns, "installed")); !ok {
		t.Errorf("post-install hook applied before the Deployment is Current (err %v)", err)
	}
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	env.Exists(t, configMap(ns, "installed"))
	got := env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if got.Status.Hooks == nil || got.Status.Hooks.Event != "install" || len(got.Status.Hooks.Completed) != 3 {
		t.Fatalf("status.hooks = %+v, want the install's three hooks recorded", got.Status.Hooks)
	}
	for _, m := range got.Status.Members {
		if m.Kind != "Deployment" {
			t.Errorf("status.members lists %s/%s, want the Deployment alone (hooks are not members)", m.Kind, m.Name)
		}
	}
	return dep
}

// installDoneStaysDone: passes of the installed revision that member
// events bring neither re-create the deleted Job nor leave Ready, never
// apply the test Pod, and once converged write nothing.
func installDoneStaysDone(t *testing.T, ns string, dep *appsv1.Deployment) {
	t.Helper()
	// Member events bring more passes of the same revision: the deleted
	// Job stays deleted and the Composition stays Ready.
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "again"})
	testenv.Consistently(t, 2*time.Second, "the succeeded hook Job is not re-created", func() (bool, error) {
		if ok, err := env.Absent(job(ns, "migrate")); !ok {
			return false, err
		}
		return meta.IsStatusConditionTrue(env.GetComposition(t, ns, "app").Status.Conditions, v1alpha1.ConditionReady), nil
	})
	if ok, err := env.Absent(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "smoke"}}); !ok {
		t.Errorf("test hook Pod was applied (err %v)", err)
	}

	// Converged, a pass costs no write: hooks that ran are not re-applied
	// and their record is not rewritten. The pass a label of the
	// Deployment brings (it finds the Deployment unchanged: an apply sent
	// would be a write) is waited for, and the controller settled first.
	env.Controller.Settle(t, ns)
	before := env.Controller.Mark()
	env.TouchAndPass(t, env.Controller, ns, "app", dep)
	if writes := env.Controller.WritesSince(before, ns); len(writes) != 0 {
		t.Errorf("the controller made %d write requests on a converged Composition with hooks, want 0: %v", len(writes), writes)
	}
}

// upgradeRunsUpgradeHooks: a new revision of comp is an upgrade: the
// pre-upgrade Job runs once more before the Deployment dep is upgraded,
// the post-install hook does not, and the post-upgrade hook waits for the
// upgraded Deployment.
func upgradeRunsUpgradeHooks(t *testing.T, comp *v1alpha1.Composition, dep *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	ns := comp.Namespace
	// A new revision is an upgrade: the pre-upgrade Job runs again, once.
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) {
		c.Spec.Values = jsonValues(`{"image":"nginx:1.28"}`)
	})
	migrate := job(ns, "migrate")
	env.Exists(t, migrate)
	if got := migrate.Annotations[plan.AnnotationHookRevision]; !strings.HasPrefix(got, "2/") {
		t.Errorf("hook revision annotation = %q, want generation 2", got)
	}
	// The pass that applied the pre-upgrade Job waits for it: Reconciling,
	// naming it (not a transient failure's Reconciling, whose pass may
	// have stopped before the hooks' record was made).
	got := env.CompositionWith(t, ns, "app",
		testenv.Condition{Type: v1alpha1.ConditionReconciling, Reasons: []string{v1alpha1.ReasonProgressing}, Message: testenv.Says("pre-upgrade hook Job/" + ns + "/migrate")})
	if got.Status.Hooks == nil || got.Status.Hooks.Event != "upgrade" {
		t.Errorf("status.hooks = %+v, want the upgrade's record", got.Status.Hooks)
	}
	finishJob(t, migrate, true)
	env.Gone(t, job(ns, "migrate"))
	testenv.Eventually(t, 0, "the Deployment to be upgraded", func() (bool, error) {
		if err := env.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		return dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", nil
	})
	installed := configMap(ns, "installed")
	env.Exists(t, installed)
	if installed.Data["image"] != "nginx:1.27" {
		t.Errorf("post-install hook re-run on upgrade: image %q", installed.Data["image"])
	}
	// The post-upgrade hook waits for the upgraded Deployment's rollout.
	testenv.Consistently(t, time.Second, "the post-upgrade hook waits for the rollout", func() (bool, error) {
		return env.Absent(configMap(ns, "upgraded"))
	})
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	env.Exists(t, configMap(ns, "upgraded"))
	got = env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if n := len(got.Status.Hooks.Completed); n != 3 {
		t.Errorf("status.hooks.completed has %d hooks, want the upgrade's 3: %+v", n, got.Status.Hooks.Completed)
	}
}

// TestFailedHookStalls: a pre-install Job that fails stalls the
// Composition naming the Job; nothing after it is applied; hook-failed
// deletes the Job, and it is not run again for the same revision.
func TestFailedHookStalls(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "hookfail-"+ns, hookedApp("hook-failed"))
	env.MustCreate(t, suite.Composition(ns, "app", b.Name, ""))

	migrate := job(ns, "migrate")
	env.Exists(t, migrate)
	finishJob(t, migrate, false)
	got := env.CompositionWith(t, ns, "app", testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonHookFailed},
		Message: testenv.Says("pre-install hook Job/"+ns+"/migrate failed", "backoff limit")})
	if got.Status.Hooks == nil || len(got.Status.Hooks.Completed) != 2 || got.Status.Hooks.Completed[1].Result != "Failed" {
		t.Errorf("status.hooks = %+v, want the ConfigMap Succeeded and the Job Failed", got.Status.Hooks)
	}
	env.Gone(t, job(ns, "migrate"))
	testenv.Consistently(t, 2*time.Second, "a failed hook is not run again, and nothing after it is applied", func() (bool, error) {
		if ok, err := env.Absent(job(ns, "migrate")); !ok {
			return false, err
		}
		return env.Absent(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	})
}

func jsonValues(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// TestPruneSparesRunningHook: a hook Job that is no longer rendered is not
// pruned while it runs; once it has finished it is pruned like any member.
func TestPruneSparesRunningHook(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "hookprune-"+ns, map[string]string{
		"values.yaml": "hook: true\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  hook: "{{ .Values.hook }}"
`,
		"templates/job.yaml": `{{- if .Values.hook }}
apiVersion: batch/v1
kind: Job
metadata:
  name: seed
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: seed
        image: busybox
{{- end }}
`,
	})
	comp := suite.Composition(ns, "app", b.Name, "")
	env.MustCreate(t, comp)
	seed := job(ns, "seed")
	env.Exists(t, seed)
	finishJob(t, seed, true)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// A new revision with the hook: it runs again (before-hook-creation
	// replaces the finished Job); while it runs, the hook is dropped.
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values = jsonValues(`{"hook":true,"v":2}`) })
	testenv.Eventually(t, 0, "the pre-upgrade Job of revision 2", func() (bool, error) {
		err := env.Get(context.Background(), client.ObjectKeyFromObject(seed), seed)
		return err == nil && strings.HasPrefix(seed.Annotations[plan.AnnotationHookRevision], "2/"), client.IgnoreNotFound(err)
	})
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values = jsonValues(`{"hook":false}`) })
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	testenv.Consistently(t, 2*time.Second, "the running hook Job is not pruned", func() (bool, error) {
		err := env.Get(context.Background(), client.ObjectKeyFromObject(seed), &batchv1.Job{})
		return err == nil, err
	})
	finishJob(t, seed, true)
	env.Gone(t, job(ns, "seed"))
}
