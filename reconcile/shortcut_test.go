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
	got := condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue)
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
	eventually(t, "label the Deployment", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return false, err
		}
		dep.Labels["drift"] = "yes"
		err := k.Update(ctx, dep)
		return err == nil, err
	})
	eventually(t, "the drifted member to bring a render", func() (bool, error) {
		return controller.Renders(ns, "web") > renders, nil
	})
	settled(t, ns, "web")

	renders = controller.Renders(ns, "web")
	markAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	got = condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if got.Status.Summary != "2/2 ready" || len(got.Status.Members) != 2 {
		t.Errorf("status %q with %d members, want 2/2 ready", got.Status.Summary, len(got.Status.Members))
	}
	if n := controller.Renders(ns, "web") - renders; n != 0 {
		t.Errorf("a status-only change of a member rendered the Composition %d times, want 0", n)
	}

	renders = controller.Renders(ns, "web")
	eventually(t, "bundle edit", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		b.Spec.Files["values.yaml"] = "replicas: 1\nimage: nginx:1.28\nport: 80\nservice: true\n"
		err := k.Update(ctx, b)
		return err == nil, err
	})
	eventually(t, "the new Bundle revision to be applied", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.Spec.Template.Spec.Containers[0].Image == "nginx:1.28", err
	})
	if controller.Renders(ns, "web") == renders {
		t.Errorf("a new Bundle revision was applied without a render")
	}
}
