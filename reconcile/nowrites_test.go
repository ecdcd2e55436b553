package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestNoWritesForExamples: once an example Composition is Ready, passes
// brought by events on its members (another manager labels each member in
// turn) send no apply, status patch or event; the only writes are the
// server-side dry runs that settle, once per member, fields the server
// defaults (at most one per member over the set's whole life), and a
// second round of such events sends no write request at all. Counted on
// the controller's transport, so an apply that changed nothing on the
// server would count too. cloudmanager holds a Secret written with
// stringData and a StatefulSet whose volumeClaimTemplates the server
// defaults. (The pass after the one that created the members decides
// nothing locally: the members are as stencil's own applies left them,
// nochange.Applied; a member's first drift check may then ask the server.)
func TestNoWritesForExamples(t *testing.T) {
	ctx := context.Background()
	for name, ex := range examples(t) {
		t.Run(name, func(t *testing.T) {
			ns := testenv.Namespace(t, k)
			spec := ex.bundle.Spec()
			b := bundle(t, ex.comp.Spec.Bundle+"-"+ns, spec.Files, func(s *v1alpha1.BundleSpec) { *s = spec })
			comp := composition(ns, ex.comp.Name, b.Name, "")
			comp.Spec.Values = ex.comp.Spec.Values
			from := controller.Mark()
			mustCreate(t, comp)
			eventually(t, name+" Ready", func() (bool, error) {
				if err := markWorkloadsReady(ctx, ns); err != nil {
					return false, err
				}
				got := &v1alpha1.Composition{}
				if err := k.Get(ctx, client.ObjectKeyFromObject(comp), got); err != nil {
					return false, err
				}
				c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
				if c == nil {
					return false, fmt.Errorf("no Ready condition")
				}
				comp = got
				return c.Status == metav1.ConditionTrue && got.Status.ObservedGeneration == got.Generation, fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			})
			// The convergence's events are sent asynchronously: let them
			// go out before counting.
			controller.Settle(t, ns)
			members := comp.Status.Members
			if len(members) == 0 {
				t.Fatal("a Ready Composition lists no members")
			}
			for round := range 2 {
				before := controller.Mark()
				for _, m := range members {
					touchAndPass(t, controller, ns, comp.Name, memberObject(m))
				}
				// Counted in the test's namespace only: other tests'
				// parents, gone or going, have passes of their own. A
				// write that is no dry run (an apply that changed nothing
				// on the server, applyset.Reapplied, among them) fails the
				// round.
				all := writesIn(controller, before, ns)
				writes, asked := len(all), 0
				for _, w := range all {
					if strings.Contains(w, "dryRun=All") {
						asked++
					}
				}
				if round == 1 && writes != 0 {
					t.Errorf("round 2: the controller sent %d write requests over %d passes with nothing to change, want 0: %v", writes, len(members), all)
				}
				if writes != asked {
					t.Errorf("round %d: the controller sent %d write requests over %d passes with nothing to change, %v of them dry runs: want only dry runs: %v", round+1, writes, len(members), asked, all)
				}
			}
			dryRuns := 0
			for _, w := range writesIn(controller, from, ns) {
				if strings.Contains(w, "dryRun=All") {
					dryRuns++
				}
			}
			if dryRuns > len(members) {
				t.Errorf("%d dry runs over the set's life, want at most one per member (%d)", dryRuns, len(members))
			}
		})
	}
}

// touches numbers the labels touchLabel writes, so that each is a change.
var touches atomic.Int64

// touchLabel sets label touched of obj (its kind, namespace and name) to a
// value it never had, as another field manager would: a change of the
// object's own fields, which a member's Composition takes for drift to
// look at (a full pass), and which stencil, which does not manage the
// label, leaves as it is.
func touchLabel(obj client.Object) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{"touched":"t%d"}}}`, touches.Add(1))
	if err := k.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("toucher")); err != nil {
		return fmt.Errorf("touch %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	return nil
}

// memberObject is the member m names, to touch.
func memberObject(m v1alpha1.MemberStatus) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: m.Group, Version: m.Version, Kind: m.Kind})
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u
}

// touchAndPass touches obj, a member of Composition ns/name (touchLabel),
// waits until a pass of the Composition that started after the touch has
// ended (testenv.Controller.PassAfter: a touch a pass under way took in
// is made again), and then until controller c has settled (no pass
// running, its events sent). Passes over a set touched member by member
// are waited for one by one: a member touched while a pass runs may be
// dry-run by that pass as its cache holds it, which the API server
// refuses as stale, and the pass then writes (as it rightly may: see
// package nochange), which is not what a test of converged passes counts.
func touchAndPass(t *testing.T, c *testenv.Controller, ns, name string, obj client.Object) {
	t.Helper()
	c.PassAfter(t, ns, name, func() error { return touchLabel(obj) })
	c.Settle(t, ns)
}

// markWorkloadsReady writes the status a kube-controller-manager (which
// envtest does not run) would give the Deployments and StatefulSets of ns
// once their pods are up.
func markWorkloadsReady(ctx context.Context, ns string) error {
	var deps appsv1.DeploymentList
	if err := k.List(ctx, &deps, client.InNamespace(ns)); err != nil {
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
		if err := k.Status().Update(ctx, d); err != nil {
			return err
		}
	}
	var sets appsv1.StatefulSetList
	if err := k.List(ctx, &sets, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range sets.Items {
		s := &sets.Items[i]
		r := int32(1)
		if s.Spec.Replicas != nil {
			r = *s.Spec.Replicas
		}
		if s.Status.ObservedGeneration == s.Generation && s.Status.ReadyReplicas == r {
			continue
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: r, ReadyReplicas: r, CurrentReplicas: r,
			UpdatedReplicas: r, AvailableReplicas: r, CurrentRevision: "r1", UpdateRevision: "r1"}
		if err := k.Status().Update(ctx, s); err != nil {
			return err
		}
	}
	return nil
}
