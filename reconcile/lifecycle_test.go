package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestStatusFollowsChildReadiness: the Composition is Reconciling while its
// Deployment rolls out, Ready once it is available, and Stalled (naming it)
// when its rollout fails.
func TestStatusFollowsChildReadiness(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "readiness-"+ns, appService())
	mustCreate(t, composition(ns, "web", b.Name, `{"replicas":2}`))

	// Reconciling because the Deployment rolls out, naming it: not a
	// transient failure's Reconciling (ReconcileFailed) on the way.
	got := compositionWith(t, ns, "web",
		testenv.Condition{Type: v1alpha1.ConditionReconciling, Reasons: []string{v1alpha1.ReasonProgressing}},
		testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Message: testenv.Says("Deployment/" + ns + "/web")})
	if got.Status.Summary != "1/2 ready" {
		t.Errorf("summary = %q, want 1/2 ready (the Service is Current, the Deployment not)", got.Status.Summary)
	}

	dep := deployment(ns, "web")
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	got = condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if got.Status.Summary != "2/2 ready" || len(got.Status.Members) != 2 {
		t.Errorf("status = %q with %d members, want 2/2 ready with 2", got.Status.Summary, len(got.Status.Members))
	}
	if cond(got, v1alpha1.ConditionReconciling) != "" || cond(got, v1alpha1.ConditionStalled) != "" {
		t.Errorf("Ready Composition still has Reconciling or Stalled: %+v", got.Status.Conditions)
	}
	if got.Status.BundleRevision == "" {
		t.Errorf("status.bundleRevision is empty")
	}

	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"})
	compositionWith(t, ns, "web",
		testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonMemberFailed}},
		testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Message: testenv.Says("Deployment/" + ns + "/web")})
}

// TestNoWritesWhenNothingChanged: once converged, a reconcile (here brought by
// an event on a member) makes no write request at all.
func TestNoWritesWhenNothingChanged(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "nowrites-"+ns, appService())
	mustCreate(t, composition(ns, "web", b.Name, `{}`))
	dep := deployment(ns, "web")
	exists(t, dep)
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	// The convergence's events are sent asynchronously: let them go out
	// before counting.
	controller.Settle(t, ns)

	before := controller.Mark()
	// A label stencil does not manage: the member's event brings a full
	// pass, which finds both members unchanged (an apply sent would be a
	// write).
	env.TouchAndPass(t, controller, ns, "web", dep)
	if writes := writesIn(controller, before, ns); len(writes) != 0 {
		t.Errorf("the controller made %d write requests on a reconcile with nothing to change, want 0: %v", len(writes), writes)
	}
}

// TestDeletion: deleting a Composition deletes its members (Delete) or
// leaves them without the part-of label (Orphan), then lets it go.
func TestDeletion(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []v1alpha1.DeletionPolicy{v1alpha1.DeletionPolicyDelete, v1alpha1.DeletionPolicyOrphan} {
		t.Run(string(policy), func(t *testing.T) {
			ns := testenv.Namespace(t, k)
			b := bundle(t, "delete-"+ns, appService())
			comp := composition(ns, "web", b.Name, `{}`)
			comp.Spec.DeletionPolicy = policy
			mustCreate(t, comp)
			dep, svc := deployment(ns, "web"), service(ns, "web")
			exists(t, dep)
			exists(t, svc)
			eventually(t, "finalizer", func() (bool, error) {
				err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp)
				return err == nil && contains(comp.Finalizers, v1alpha1.Finalizer), err
			})
			if err := k.Delete(ctx, comp); err != nil {
				t.Fatal(err)
			}
			gone(t, comp)
			if policy == v1alpha1.DeletionPolicyDelete {
				gone(t, dep)
				gone(t, svc)
				return
			}
			for _, obj := range []client.Object{dep, svc} {
				if err := k.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					t.Fatalf("orphaned member: %v", err)
				}
				if _, ok := obj.GetLabels()[applyset.LabelPartOf]; ok {
					t.Errorf("orphaned %s still carries %s", obj.GetName(), applyset.LabelPartOf)
				}
			}
		})
	}
}

// TestSuspend: a suspended Composition makes no writes and does not claim
// the generation it has not applied: status.observedGeneration stays at
// the last generation reconciled, so kstatus reads InProgress, and Ready is
// False with reason Suspended, while the members are still reported.
// Resuming applies the new generation.
func TestSuspend(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "suspend-"+ns, appService())
	comp := composition(ns, "web", b.Name, `{"replicas":1}`)
	mustCreate(t, comp)
	dep := deployment(ns, "web")
	exists(t, dep)
	env.MarkAvailable(t, dep, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
	applied := condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue).Generation

	update(t, comp, func(c *v1alpha1.Composition) {
		c.Spec.Suspend = true
		c.Spec.Values.Raw = []byte(`{"replicas":4,"service":false}`)
	})
	got := &v1alpha1.Composition{}
	eventually(t, "Ready=False with reason Suspended", func() (bool, error) {
		if err := k.Get(ctx, client.ObjectKeyFromObject(comp), got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Reason == v1alpha1.ReasonSuspended && c.ObservedGeneration == got.Generation, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse {
		t.Errorf("suspended Composition: Ready=%s, want False", c.Status)
	}
	if got.Status.ObservedGeneration != applied || got.Generation <= applied {
		t.Errorf("suspended Composition: observedGeneration %d, generation %d; want observedGeneration to stay %d", got.Status.ObservedGeneration, got.Generation, applied)
	}
	if cond(got, v1alpha1.ConditionReconciling) != "" || cond(got, v1alpha1.ConditionStalled) != "" {
		t.Errorf("suspended Composition has Reconciling or Stalled: %+v", got.Status.Conditions)
	}
	if got.Status.Summary != "2/2 ready" || len(got.Status.Members) != 2 {
		t.Errorf("suspended Composition: summary %q with %d members, want the 2 live members, both ready", got.Status.Summary, len(got.Status.Members))
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := kstatus.Compute(&unstructured.Unstructured{Object: u}); err != nil || res.Status != kstatus.InProgressStatus {
		t.Errorf("kstatus of the suspended Composition = %+v (%v), want InProgress", res, err)
	}

	consistently(t, "the suspended members to stay as they were", 2*time.Second, func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		if err != nil {
			return false, err
		}
		err = k.Get(ctx, key(ns, "web"), &corev1.Service{})
		return *dep.Spec.Replicas == 1 && err == nil, err
	})
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Suspend = false })
	eventually(t, "resume to apply", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && *dep.Spec.Replicas == 4, err
	})
	gone(t, service(ns, "web"))
	condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue)
}

// TestDeleteAfterRestart: a deletion under way when the controller
// restarts is finished by the fresh controller, which watches nothing yet
// and, its status already saying Deleting, writes nothing that would bring
// it back. Members go in reverse apply order, rank by rank: the Deployment
// first, held by a finalizer of the test's own, which the test releases
// while the controller is down; then the ConfigMap, deleted at once by the
// fresh controller, whose deletion must bring the pass that lets the
// Composition go (no other member is left to raise an event).
func TestDeleteAfterRestart(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	files := appService()
	files["templates/config.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  a: b\n"
	b := bundle(t, "restart-"+ns, files)
	comp := composition(ns, "web", b.Name, `{"service":false}`)
	mustCreate(t, comp)
	dep, cm := deployment(ns, "web"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}
	exists(t, dep)
	exists(t, cm)
	const hold = "test.stencil.dev/hold"
	setHold := func(obj client.Object, on bool) {
		testenv.Update(t, k, obj, func() {
			f := slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == hold })
			if on {
				f = append(f, hold)
			}
			obj.SetFinalizers(f)
		})
	}
	setHold(dep, true)
	eventually(t, "finalizer", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp)
		return err == nil && contains(comp.Finalizers, v1alpha1.Finalizer), err
	})
	if err := k.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment to be deleted", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.DeletionTimestamp != nil, err
	})
	// The status says Deleting (the deletion's pass wrote it, for the
	// generation the deletion gave the Composition) before the restart.
	condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonDeleting)
	if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || cm.DeletionTimestamp != nil {
		t.Errorf("the ConfigMap (a lower rank) is going before the Deployment is gone (err %v)", err)
	}

	restartController(t, func() {
		setHold(dep, false)
		gone(t, dep)
	})
	gone(t, cm)
	gone(t, comp)
}

// TestDeleteWhileDown: a Composition deleted while the controller is
// down is finalized by the fresh controller: its Deployment, held by a
// finalizer of the test's own, is deleted and waited on; once the test
// releases it, the Service and the Composition go.
func TestDeleteWhileDown(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "down-"+ns, appService())
	comp := composition(ns, "web", b.Name, `{}`)
	mustCreate(t, comp)
	dep, svc := deployment(ns, "web"), service(ns, "web")
	exists(t, dep)
	exists(t, svc)
	const hold = "test.stencil.dev/hold"
	testenv.Update(t, k, dep, func() { dep.Finalizers = append(dep.Finalizers, hold) })
	eventually(t, "finalizer", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp)
		return err == nil && contains(comp.Finalizers, v1alpha1.Finalizer), err
	})
	restartController(t, func() {
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
	})
	eventually(t, "the Deployment to be deleted", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return err == nil && dep.DeletionTimestamp != nil, err
	})
	if err := k.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil || svc.DeletionTimestamp != nil {
		t.Errorf("the Service (a lower rank) is going before the Deployment is gone (err %v)", err)
	}
	testenv.Update(t, k, dep, func() {
		dep.Finalizers = slices.DeleteFunc(dep.Finalizers, func(f string) bool { return f == hold })
	})
	gone(t, dep)
	gone(t, svc)
	gone(t, comp)
}

// TestMetadataRerenders: templates that read the Composition's labels and
// annotations are rendered again when those change, from the first pass
// on (when stencil writes its own ApplySet metadata); stencil's own writes
// on the Composition bring no render.
func TestMetadataRerenders(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "metadata-"+ns, map[string]string{
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: meta
data:
  team: {{ .Composition.Labels.team | default "none" | quote }}
  note: {{ index .Composition.Annotations "example.com/note" | default "none" | quote }}
`,
	})
	comp := composition(ns, "meta", b.Name, "")
	comp.Labels = map[string]string{"team": "a"}
	comp.Annotations = map[string]string{"example.com/note": "first"}
	mustCreate(t, comp)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "meta"}}
	data := func(team, note string) func() (bool, error) {
		return func() (bool, error) {
			err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm)
			return err == nil && cm.Data["team"] == team && cm.Data["note"] == note, fmt.Errorf("data %v (%v)", cm.Data, err)
		}
	}
	eventually(t, "the first render to read the labels and annotations", data("a", "first"))
	condition(t, ns, "meta", v1alpha1.ConditionReady, metav1.ConditionTrue)
	settled(t, ns, "meta")

	update(t, comp, func(c *v1alpha1.Composition) { c.Labels["team"] = "b" })
	eventually(t, "a label edit to re-render", data("b", "first"))
	update(t, comp, func(c *v1alpha1.Composition) { c.Annotations["example.com/note"] = "second" })
	eventually(t, "an annotation edit to re-render", data("b", "second"))
	settled(t, ns, "meta")
}

// settled waits until a second passes without a render of the
// Composition. Were stencil's own writes on the Composition (its ApplySet
// metadata, its status) to bring a render, that second would never come.
func settled(t *testing.T, ns, name string) {
	t.Helper()
	last := int64(-1)
	eventually(t, "renders of "+name+" to settle", func() (bool, error) {
		n := controller.Renders(ns, name)
		ok := n == last
		last = n
		time.Sleep(time.Second)
		return ok, nil
	})
}

// TestCRDBeforeItsResources: a CRD and a resource of its kind in one bundle
// are applied in order, the resource once the CRD is Established.
func TestCRDBeforeItsResources(t *testing.T) {
	ns := testenv.Namespace(t, k)
	group := "w" + ns + ".example.com"
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.` + group + `
spec:
  group: ` + group + `
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`
	b := bundle(t, "crd-"+ns, map[string]string{
		"templates/a-widget.yaml": "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n",
		"templates/z-crd.yaml":    crd,
	}, func(s *v1alpha1.BundleSpec) {
		s.Permissions.ClusterScoped = []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}
	})
	mustCreate(t, composition(ns, "widgets", b.Name, ""))
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(group + "/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName("w")
	exists(t, w)
	condition(t, ns, "widgets", v1alpha1.ConditionReady, metav1.ConditionTrue)
	crdObj := &unstructured.Unstructured{}
	crdObj.SetAPIVersion("apiextensions.k8s.io/v1")
	crdObj.SetKind("CustomResourceDefinition")
	crdObj.SetName("widgets." + group)
	t.Cleanup(func() { _ = k.Delete(context.Background(), crdObj) })

	// Both leave the render: the CRD is pruned, and the recorded Widget kind,
	// which the server no longer serves, is dropped rather than failing. A
	// CRD is a protected kind, and two of three members past the prune
	// budget: the Bundle allows both.
	all := intstr.FromString("100%")
	testenv.Update(t, k, b, func() {
		b.Spec.Pruning = &v1alpha1.PrunePolicy{Budget: &all, AllowDelete: []v1alpha1.GroupKind{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}}}
		b.Spec.Files = map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n"}
	})
	gone(t, crdObj)
	comp := &v1alpha1.Composition{}
	eventually(t, "the inventory to drop the vanished kind", func() (bool, error) {
		err := k.Get(context.Background(), key(ns, "widgets"), comp)
		return err == nil && comp.Annotations[applyset.AnnotationGroupKinds] == "ConfigMap", err
	})
	condition(t, ns, "widgets", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestStatusFromThisPass: the status is what the pass observed, not what
// the last one did: a pass that stops at a broken template lists no
// members and no summary (it rendered none), rather than republishing the
// members of the last good render as if current.
func TestStatusFromThisPass(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "thispass-"+ns, appService())
	mustCreate(t, composition(ns, "web", b.Name, `{}`))
	// Reconciling while the Deployment rolls out: a pass that applied
	// both (not a transient failure's Reconciling on the way).
	got := condition(t, ns, "web", v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing)
	if len(got.Status.Members) != 2 {
		t.Fatalf("members %+v, want the Deployment and the Service", got.Status.Members)
	}
	testenv.Update(t, k, b, func() { b.Spec.Files["templates/broken.yaml"] = "{{ .Values.missing.field }}\n" })
	got = condition(t, ns, "web", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRenderFailed)
	if len(got.Status.Members) != 0 || got.Status.Summary != "" {
		t.Errorf("a pass that rendered nothing reports members %+v and summary %q, want none", got.Status.Members, got.Status.Summary)
	}
	if got.Status.BundleRevision == "" {
		t.Errorf("status.bundleRevision (the revision last rendered) was dropped")
	}
}
