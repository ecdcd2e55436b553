package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/prune"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/observed"
)

// endpointFiles is examples/bundles/endpoint, with a ConfigMap more that
// reads a label of the Service another manager may set.
func endpointFiles(t *testing.T) map[string]string {
	t.Helper()
	b, err := templates.Load(os.DirFS(filepath.Join(testenv.Root(), "examples", "bundles", "endpoint")), templates.LoadOptions{Name: "endpoint"})
	if err != nil {
		t.Fatal(err)
	}
	files := b.Spec().Files
	files["templates/zone.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-zone
data:
  zone: {{ observed "web" "metadata.labels.zone" | default "none" | quote }}
  lb: {{ observed "web" "status.conditions.0.reason" | default "" | quote }}
`
	return files
}

// patchLabels merge-patches labels onto an object as another manager.
func patchLabels(t *testing.T, obj client.Object, labels string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":%s}}`, labels)
	if err := k.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("toucher")); err != nil {
		t.Fatalf("label %s: %v", obj.GetName(), err)
	}
}

// TestObservedSecondRender: the endpoint example's ConfigMap waits for
// the Service's clusterIP, which the API server assigns: the first pass
// applies the Service alone, the second the ConfigMap with the address.
// A value a template read changing (a label of the Service, a field of
// its status) renders again and writes; an event changing nothing a template read writes
// nothing.
func TestObservedSecondRender(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "endpoint-"+ns, endpointFiles(t))
	mustCreate(t, composition(ns, "fe", b.Name, `{"port":8080}`))

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fe-web"}}
	exists(t, svc)
	if svc.Spec.ClusterIP == "" {
		t.Fatal("the API server gave the Service no clusterIP")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fe-endpoint"}}
	exists(t, cm)
	if want := "http://" + svc.Spec.ClusterIP + ":8080"; cm.Data["url"] != want {
		t.Errorf("ConfigMap url = %q, want %q", cm.Data["url"], want)
	}
	comp := condition(t, ns, "fe", v1alpha1.ConditionReady, metav1.ConditionTrue)
	if len(comp.Status.Members) != 3 {
		t.Errorf("%d members, want the Service and two ConfigMaps", len(comp.Status.Members))
	}

	// A label the templates read: rendered again, written.
	patchLabels(t, svc, `{"zone":"eu"}`)
	zone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fe-zone"}}
	eventually(t, "the zone ConfigMap to follow the Service's label", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(zone), zone)
		return err == nil && zone.Data["zone"] == "eu", fmt.Errorf("zone = %q (%v)", zone.Data["zone"], err)
	})
	condition(t, ns, "fe", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// A status field the templates read: a status-only change, which
	// the shortcut takes for nothing unless a template read it.
	controller.Settle(t, ns)
	testenv.UpdateStatus(t, k, svc, func() {
		svc.Status.Conditions = []metav1.Condition{{Type: "Probed", Status: metav1.ConditionTrue, Reason: "Reachable", Message: "ok", LastTransitionTime: metav1.Now()}}
	})
	eventually(t, "the zone ConfigMap to follow the Service's status", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(zone), zone)
		return err == nil && zone.Data["lb"] == "Reachable", fmt.Errorf("lb = %q (%v)", zone.Data["lb"], err)
	})
	condition(t, ns, "fe", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)

	// A label no template reads: passes (each waited for, see
	// suite.Suite.TouchAndPass), no write. Counted in the test's namespace: other
	// tests' parents have passes of their own.
	before := controller.Mark()
	for _, obj := range []client.Object{svc, cm, zone} {
		env.TouchAndPass(t, controller, ns, "fe", obj)
	}
	if writes := writesIn(controller, before, ns); len(writes) != 0 {
		t.Errorf("the controller sent %d write requests for events that change no value a template read, want 0: %v", len(writes), writes)
	}
}

// loopFiles are two ConfigMaps, each one letter longer than the other's
// observed value: they feed each other for ever, unless kept is set.
var loopFiles = map[string]string{
	"templates/old.yaml": "{{ if .Values.old }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n{{ end }}",
	"templates/loop.yaml": `{{ if .Values.loop }}apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  v: {{ printf "%sx" (observed "ConfigMap/b" "data.v" | default "") | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
data:
  v: {{ printf "%sy" (observed "ConfigMap/a" "data.v" | default "") | quote }}
{{ end }}`,
}

// TestObservedLoopIsFlapping: two members feeding each other's values
// stall the parent with reason Flapping within MaxObservedPasses passes,
// and nothing is pruned on the way (an unsettled render is not the
// set's final one).
func TestObservedLoopIsFlapping(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "loop-"+ns, loopFiles)
	comp := composition(ns, "lp", b.Name, `{"old":true}`)
	mustCreate(t, comp)
	condition(t, ns, "lp", v1alpha1.ConditionReady, metav1.ConditionTrue)

	update(t, comp, func(c *v1alpha1.Composition) {
		c.Spec.Values.Raw = []byte(`{"loop":true}`)
	})
	// The two members feed each other: the pass that notices names the
	// values it saw move (ids ConfigMap/a and ConfigMap/b: a's, b's or
	// both), and a pass whose cache lagged may reset the count of
	// unsettled passes so that the member written five times is named
	// instead (applyset.FlapDetector, as ConfigMap/<namespace>/<name>):
	// each is right.
	testenv.WaitFor(t, k, comp, 0, testenv.Condition{Type: v1alpha1.ConditionStalled, Reasons: []string{v1alpha1.ReasonFlapping},
		Message: func(m string) bool {
			for _, named := range []string{"ConfigMap/a data.v", "ConfigMap/b data.v", "ConfigMap/" + ns + "/a was written", "ConfigMap/" + ns + "/b was written"} {
				if strings.Contains(m, named) {
					return true
				}
			}
			return false
		}})
	a := &corev1.ConfigMap{}
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "a"}, a); err != nil {
		t.Fatal(err)
	}
	if n := len(a.Data["v"]); n > 2*5 {
		t.Errorf("a.data.v has %d letters: more passes than the bound ran", n)
	}
	consistently(t, "the old member kept and the loop stopped", 2*time.Second, func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "old"}, &corev1.ConfigMap{}); err != nil {
			return false, err
		}
		now := &corev1.ConfigMap{}
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(a), now); err != nil {
			return false, err
		}
		return now.Data["v"] == a.Data["v"], nil
	})
}

// TestHeldBackIsNeverPruned: an object that exists and is now held back
// stays (not applied, never pruned for it), the parent says what it waits
// for (Ready=False, reason Waiting), and once the value is observed the
// object is applied and the parent Ready.
func TestHeldBackIsNeverPruned(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "waiter-"+ns, suite.WaiterFiles())
	comp := composition(ns, "w", b.Name, `{}`)
	mustCreate(t, comp)
	condition(t, ns, "w", v1alpha1.ConditionReady, metav1.ConditionTrue)
	waiter := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waiter"}}
	exists(t, waiter)

	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"wait":true}`) })
	// Waiting, naming what waits for what: not a transient failure's
	// Ready=False on the way.
	comp = compositionWith(t, ns, "w", testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reasons: []string{v1alpha1.ReasonWaiting},
		Message: testenv.Says("ConfigMap/waiter waits for Service/web metadata.labels.go")})
	consistently(t, "the held-back ConfigMap kept as it was", 2*time.Second, func() (bool, error) {
		got := &corev1.ConfigMap{}
		err := k.Get(context.Background(), client.ObjectKeyFromObject(waiter), got)
		return err == nil && got.Annotations[observed.AnnotationWaitFor] == "", err
	})

	// The previews (stencil diff, the webhook) do not count it as one to prune.
	loaded, err := templates.LoadObject(b)
	if err != nil {
		t.Fatal(err)
	}
	planned, err := plan.NewPlan(context.Background(), testenv.InProcess{}, loaded, plan.RenderInput(comp, nil, nil), cluster.NewAPIs(k.RESTMapper(), k))
	if err != nil {
		t.Fatal(err)
	}
	candidates, err := prune.Candidates(context.Background(), k, k.RESTMapper(), comp, planned)
	if err != nil {
		t.Fatal(err)
	}
	if len(planned.Held) != 1 || len(candidates) != 0 {
		t.Errorf("a plan holding back %v previews pruning %v, want the held-back waiter kept", planned.Held, candidates)
	}

	patchLabels(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, `{"go":"yes"}`)
	eventually(t, "the ConfigMap applied with the value", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(waiter), waiter)
		return err == nil && waiter.Data["go"] == "yes" && waiter.Annotations[observed.AnnotationWaitFor] != "", fmt.Errorf("data %v (%v)", waiter.Data, err)
	})
	condition(t, ns, "w", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestAllHeldBackIsNotAnEmptyRender: a render whose every object is held
// back (here waiting for an id no object of the set has, which is never
// observed) is not an empty render: nothing is pruned, and the parent
// waits (reason Waiting), not stalls (EmptyRender).
func TestAllHeldBackIsNotAnEmptyRender(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "allheld-"+ns, map[string]string{"templates/waiter.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: waiter
  {{- if .Values.wait }}
  annotations:
    stencil.dev/wait-for: Secret/not-a-member data.token
  {{- end }}
`})
	comp := composition(ns, "w", b.Name, `{}`)
	mustCreate(t, comp)
	condition(t, ns, "w", v1alpha1.ConditionReady, metav1.ConditionTrue)

	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"wait":true}`) })
	// Reconciling and Ready=False, both Waiting and naming what waits for
	// what (an EmptyRender would stall it).
	waits := testenv.Says("ConfigMap/waiter waits for Secret/not-a-member data.token")
	compositionWith(t, ns, "w",
		testenv.Condition{Type: v1alpha1.ConditionReconciling, Reasons: []string{v1alpha1.ReasonWaiting}, Message: waits},
		testenv.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reasons: []string{v1alpha1.ReasonWaiting}, Message: waits})
	consistently(t, "the held-back ConfigMap kept", 2*time.Second, func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "waiter"}, &corev1.ConfigMap{})
		return err == nil, err
	})
}

// TestObservedAfterRestart: a controller that restarts remembers no
// reads; its first pass renders again at once with the values the cache
// holds, so it writes nothing over the converged set (no first pass
// applied over it: the ConfigMap keeps the observed zone and its version).
func TestObservedAfterRestart(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "endpoint-restart-"+ns, endpointFiles(t))
	mustCreate(t, composition(ns, "fe", b.Name, `{"port":8080}`))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fe-zone"}}
	exists(t, cm)
	patchLabels(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fe-web"}}, `{"zone":"eu"}`)
	eventually(t, "the zone ConfigMap to follow the Service's label", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["zone"] == "eu", fmt.Errorf("zone = %q (%v)", cm.Data["zone"], err)
	})
	condition(t, ns, "fe", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	version, zone := cm.ResourceVersion, cm.Data["zone"]

	restartController(t, func() {})
	eventually(t, "a pass of the restarted controller", func() (bool, error) {
		return controller.Renders(ns, "fe") > 0, nil
	})
	condition(t, ns, "fe", v1alpha1.ConditionReady, metav1.ConditionTrue)
	controller.Settle(t, ns)
	if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	if cm.ResourceVersion != version || cm.Data["zone"] != zone {
		t.Errorf("after a restart the ConfigMap is at version %s with zone %q, want %s and %q: a first pass was applied over the set",
			cm.ResourceVersion, cm.Data["zone"], version, zone)
	}
}
