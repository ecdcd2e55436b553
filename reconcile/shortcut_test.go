package reconcile_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// markUnavailable writes the status a Deployment's controller would write
// when its pods go (none available), over the Deployment as it then is.
func markUnavailable(t *testing.T, dep *appsv1.Deployment) {
	t.Helper()
	testenv.UpdateStatus(t, k, dep, func() {
		r := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: r, UpdatedReplicas: r, UnavailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
	})
}

// TestStatusOnlyChangeDoesNotRender: a member whose own fields change
// (drift: here a label someone adds) brings the full pass, which renders
// and compares again; once the Composition has converged, a member whose
// status alone changes brings a pass that recomputes the Composition's
// status (here, to Ready) without rendering; a new Bundle revision
// renders again.
func TestStatusOnlyChangeDoesNotRender(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "shortcut-"+ns, appService())
	mustCreate(t, composition(ns, "web", b.Name, `{}`))
	dep := deployment(ns, "web")
	exists(t, dep)
	// Reconciling while the Deployment rolls out (not a transient
	// failure's Reconciling on the way).
	got := condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing)
	if got.Status.Summary != "1/2 ready" {
		t.Fatalf("summary %q, want 1/2 ready before the rollout", got.Status.Summary)
	}
	settled(t, ns, "web")

	// Drift first. Its pass also starts after the controller's own first
	// writes on the Composition (status, ApplySet metadata) are in the
	// cache: a pass that read the Composition before they arrived rendered
	// with what it read (.Release.IsUpgrade false, say), and the next pass
	// rightly renders again.
	renders := controller.Renders(ns, "web")
	testenv.Update(t, k, dep, func() { dep.Labels["drift"] = "yes" })
	eventually(t, "the drifted member to bring a render", func() (bool, error) {
		return controller.Renders(ns, "web") > renders, nil
	})
	settled(t, ns, "web")

	// Converged, a member whose status alone changes (its rollout done,
	// or undone) brings a pass that recomputes the status without a
	// render. A change of the APIs the cluster serves (another test's CRD
	// going, whenever that comes) rightly renders every parent again, as
	// a change of the Bundle would: so the status changes again, up to
	// three times in all, until a change is seen that brought no render.
	// A shortcut that never serves such a pass fails all three.
	available := true
	for attempt := 1; ; attempt++ {
		renders = controller.Renders(ns, "web")
		if available {
			env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
			got = condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
			if got.Status.Summary != "2/2 ready" || len(got.Status.Members) != 2 {
				t.Errorf("status %q with %d members, want 2/2 ready", got.Status.Summary, len(got.Status.Members))
			}
		} else {
			markUnavailable(t, dep)
			condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing)
		}
		n := controller.Renders(ns, "web") - renders
		if n == 0 {
			break
		}
		if attempt == 3 {
			t.Errorf("each of %d status-only changes of a member rendered the Composition (the last %d times), want one at least with no render", attempt, n)
			break
		}
		settled(t, ns, "web")
		available = !available
	}

	renders = controller.Renders(ns, "web")
	testenv.Update(t, k, b, func() { b.Spec.Files["values.yaml"] = "replicas: 1\nimage: nginx:1.28\nport: 80\nservice: true\n" })
	eventually(t, "the new Bundle revision to be applied", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", err
	})
	if controller.Renders(ns, "web") == renders {
		t.Errorf("a new Bundle revision was applied without a render")
	}
}
