package watch

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

func TestDeploymentCurrent(t *testing.T) {
	deployment := func(updated, available int32) *appsv1.Deployment {
		replicas := int32(2)
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "roll", Namespace: "bench-roll", Generation: 3},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
			Status: appsv1.DeploymentStatus{
				ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				},
			},
		}
	}
	// As an informer hands it over: no apiVersion, no kind.
	if deploymentCurrent(deployment(1, 2)) {
		t.Error("a Deployment with one of two replicas updated is Current")
	}
	if !deploymentCurrent(deployment(2, 2)) {
		t.Error("a Deployment with every replica updated and available is not Current")
	}
}

// TestWatcherObserves: what the observer is handed is what the Watcher
// answers, and an event wakes a wait on it.
func TestWatcherObserves(t *testing.T) {
	w := &Watcher{ready: map[string]bool{}, readyAt: map[string]genTime{}, current: map[string]imageTime{}, output: map[string]valueTime{}, changes: wait.NewChanges()}
	comp := func(ns, name string, gen, observed int64, ready metav1.ConditionStatus) *v1alpha1.Composition {
		c := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: gen}}
		c.Status.ObservedGeneration = observed
		c.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: ready}}
		return c
	}
	w.observe(comp("bench", "a", 2, 2, metav1.ConditionTrue))
	w.observe(comp("bench", "b", 2, 1, metav1.ConditionTrue)) // not for its generation
	w.observe(comp("bench-x", "c", 1, 1, metav1.ConditionTrue))
	if n := w.ReadyCount("bench"); n != 1 {
		t.Errorf("ReadyCount(bench) = %d, want 1", n)
	}
	if _, ok := w.ReadySince("bench/a", 2); !ok {
		t.Error("bench/a not Ready for generation 2")
	}
	out := comp("bench", "a", 2, 2, metav1.ConditionTrue)
	out.Status.Outputs = map[string]apiextensionsv1.JSON{"extra": {Raw: []byte(`"v1"`)}}
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.observe(out)
	}()
	err := w.Until(context.Background(), time.Minute, "the output", func() bool {
		_, ok := w.OutputSince("bench/a", `"v1"`)
		return ok
	})
	if err != nil {
		t.Fatal(err)
	}
}
