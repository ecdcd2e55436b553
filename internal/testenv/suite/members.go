package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// The Suite's writes of members as others would make them: the status
// a kube-controller-manager (which envtest does not run) would write,
// and another field manager's changes.

// MarkAvailable writes a Deployment status as its controller would once
// the rollout is done, with the Progressing condition progressing, over
// the Deployment as it then is (stencil writes it too: again on a
// conflict).
func (s *Suite) MarkAvailable(t testing.TB, dep *appsv1.Deployment, progressing appsv1.DeploymentCondition) {
	t.Helper()
	testenv.UpdateStatus(t, s.Client, dep, func() {
		r := *dep.Spec.Replicas
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				progressing,
			},
		}
	})
}

// MarkWorkloadsReady writes the status a kube-controller-manager would
// give the Deployments and StatefulSets of ns once their pods are up.
func (s *Suite) MarkWorkloadsReady(ctx context.Context, ns string) error {
	var deps appsv1.DeploymentList
	if err := s.List(ctx, &deps, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		r := int32(1)
		if d.Spec.Replicas != nil {
			r = *d.Spec.Replicas
		}
		want := appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: r, UpdatedReplicas: r, ReadyReplicas: r, AvailableReplicas: r,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		}
		if d.Status.ObservedGeneration == want.ObservedGeneration && d.Status.AvailableReplicas == r {
			continue
		}
		d.Status = want
		if err := s.Status().Update(ctx, d); err != nil {
			return err
		}
	}
	var sets appsv1.StatefulSetList
	if err := s.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range sets.Items {
		set := &sets.Items[i]
		r := int32(1)
		if set.Spec.Replicas != nil {
			r = *set.Spec.Replicas
		}
		if set.Status.ObservedGeneration == set.Generation && set.Status.ReadyReplicas == r {
			continue
		}
		set.Status = appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, Replicas: r, ReadyReplicas: r, CurrentReplicas: r,
			UpdatedReplicas: r, AvailableReplicas: r, CurrentRevision: "r1", UpdateRevision: "r1"}
		if err := s.Status().Update(ctx, set); err != nil {
			return err
		}
	}
	return nil
}

// TouchLabel sets label touched of obj (its kind, namespace and name) to
// a value it never had, as another field manager would: a change of the
// object's own fields, which a member's Composition takes for drift to
// look at (a full pass), and which stencil, which does not manage the
// label, leaves as it is.
func (s *Suite) TouchLabel(obj client.Object) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"t%d"}}}`, s.touches.Add(1))
	if err := s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("toucher")); err != nil {
		return fmt.Errorf("touch %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// MemberObject is the member m names, to touch.
func MemberObject(m v1alpha1.MemberStatus) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: m.Group, Version: m.Version, Kind: m.Kind})
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u
}

// TouchAndPass touches obj, a member of Composition ns/name (TouchLabel),
// waits until a pass of the Composition that started after the touch has
// ended (Controller.PassAfter: a touch a pass under way took in is made
// again), and then until controller c has settled (no pass running, its
// events sent). Passes over a set touched member by member are waited for
// one by one: a member touched while a pass runs may be dry-run by that
// pass as its cache holds it, which the API server refuses as stale, and
// the pass then writes (as it rightly may: see package nochange), which
// is not what a test of converged passes counts.
func (s *Suite) TouchAndPass(t testing.TB, c *testenv.Controller, ns, name string, obj client.Object) {
	t.Helper()
	c.PassAfter(t, ns, name, func() error { return s.TouchLabel(obj) })
	c.Settle(t, ns)
}

// Converged waits for parent name of ns to be Ready for its generation
// and for controller c to settle, then brings it twice a pass per member
// (a label another manager adds, each pass waited for before the next
// touch: see TouchAndPass), and fails t unless the second round sends no
// write at all and the first none but the dry runs that settle fields
// the server defaults: the passes re-read the lookups' answers and the
// generated values. A lookup informer that lags the member watch (the
// touched member is looked up) gives a pass an answer older than the
// member: that pass changed nothing, so it writes nothing either, and
// the informer's event brings the pass that renders with the new answer.
// Only c's requests to ns are counted.
func (s *Suite) Converged(t testing.TB, c *testenv.Controller, ns, name string) {
	t.Helper()
	comp := s.Condition(t, ns, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
	c.Settle(t, ns)
	members := comp.Status.Members
	if len(members) == 0 {
		t.Fatal("a Ready Composition lists no members")
	}
	for round := range 2 {
		before := c.Mark()
		for _, m := range members {
			s.TouchAndPass(t, c, ns, name, MemberObject(m))
		}
		var writes []string
		for _, w := range c.WritesSince(before, ns) {
			if round == 1 || !strings.Contains(w, "dryRun=All") {
				writes = append(writes, w)
			}
		}
		if len(writes) > 0 {
			t.Errorf("round %d: %d writes over %d passes with nothing to change: %v", round+1, len(writes), len(members), writes)
		}
	}
}
