package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestForbiddenKind: the controller runs with its own RBAC, which does not
// grant ResourceQuotas. A Composition rendering one stalls with reason
// Forbidden naming the kind, the verb and the controller, before anything
// is applied, while another Composition keeps reconciling; deleting it
// completes, leaving in place the members of the kind it may not list.
func TestForbiddenKind(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	quota := bundle(t, "quota-"+ns, map[string]string{
		"templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: before-quota\n",
		"templates/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\nspec:\n  hard:\n    pods: \"10\"\n",
	})
	healthy := bundle(t, "healthy-"+ns, suite.TwoConfigMaps())
	comp := composition(ns, "quota", quota.Name, "")
	mustCreate(t, comp)
	mustCreate(t, composition(ns, "healthy", healthy.Name, `{}`))

	stalled(t, ns, "quota", v1alpha1.ReasonForbidden,
		"the controller (system:serviceaccount:stencil-system:stencil) may not list resourcequotas (ResourceQuota) cluster-wide",
		"rbac.stencil.dev/aggregate-to-manager")
	if err := k.Get(ctx, key(ns, "before-quota"), &corev1.ConfigMap{}); err == nil {
		t.Errorf("ConfigMap before-quota was applied although the Composition is Stalled: nothing may be applied")
	}

	t.Run("another Composition reconciles", func(t *testing.T) {
		condition(t, ns, "healthy", v1alpha1.ConditionReady, metav1.ConditionTrue)
		update(t, composition(ns, "healthy", "", ""), func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"renamed"}`) })
		exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "renamed"}})
		gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})
		condition(t, ns, "healthy", v1alpha1.ConditionReady, metav1.ConditionTrue)
	})

	t.Run("deleting it completes", func(t *testing.T) {
		// A member of the forbidden kind, as if the controller had been
		// allowed once, recorded in the set's inventory.
		if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
			t.Fatal(err)
		}
		// The pass stalled before anything was applied, so the controller
		// wrote no ApplySet metadata: write what it would have written.
		id := applyset.ID(comp.Name, comp.Namespace, applyset.CompositionGroupKind)
		leftover := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ResourceQuota",
			"metadata": map[string]any{"name": "leftover", "namespace": ns, "labels": map[string]any{applyset.LabelPartOf: id}},
			"spec":     map[string]any{"hard": map[string]any{"pods": "5"}},
		}}
		if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(leftover), client.FieldOwner(applyset.FieldManager)); err != nil {
			t.Fatal(err)
		}
		// The controller records its inventory in status too (issue 20
		// item 8: annotations alone are not trusted); record it first.
		record := []byte(`{"status":{"inventory":{"groupKinds":["ConfigMap","ResourceQuota"]}}}`)
		if err := k.Status().Patch(ctx, comp, client.RawPatch(types.MergePatchType, record)); err != nil {
			t.Fatal(err)
		}
		parent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "stencil.dev/v1alpha1", "kind": "Composition",
			"metadata": map[string]any{"name": comp.Name, "namespace": ns, "labels": map[string]any{applyset.LabelApplySetID: id},
				"annotations": map[string]any{applyset.AnnotationGroupKinds: "ConfigMap,ResourceQuota"}, "finalizers": []any{v1alpha1.Finalizer}},
		}}
		if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(parent), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		if err := k.Delete(ctx, comp); err != nil {
			t.Fatal(err)
		}
		gone(t, comp)
		if err := k.Get(ctx, client.ObjectKeyFromObject(leftover), leftover); err != nil {
			t.Errorf("the ResourceQuota the controller may not list was not left in place: %v", err)
		}
		eventually(t, "a Warning naming the kind left in place", func() (bool, error) {
			for _, e := range env.Events(t, ns, v1alpha1.ReasonForbidden) {
				if e.Type == "Warning" && strings.Contains(e.Note, "resourcequotas") && strings.Contains(e.Note, "left in place") {
					return true, nil
				}
			}
			return false, nil
		})
	})
}

// onOff renders ConfigMaps a and b while .Values.enabled.
func onOff() map[string]string {
	return map[string]string{
		"values.yaml":      "enabled: true\n",
		"templates/a.yaml": "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n{{- end }}\n",
		"templates/b.yaml": "{{- if .Values.enabled }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n{{- end }}\n",
	}
}

// TestEmptyRender: a render of no objects while the set has members
// prunes nothing and stalls with reason EmptyRender, until the Composition
// or its Bundle opts in with stencil.dev/allow-empty-render: "true".
func TestEmptyRender(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		optIn func(t *testing.T, comp *v1alpha1.Composition, b *v1alpha1.Bundle)
	}{
		{"annotated Composition", func(t *testing.T, comp *v1alpha1.Composition, _ *v1alpha1.Bundle) {
			update(t, comp, func(c *v1alpha1.Composition) {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations[v1alpha1.AnnotationAllowEmptyRender] = "true"
			})
		}},
		{"annotated Bundle", func(t *testing.T, _ *v1alpha1.Composition, b *v1alpha1.Bundle) {
			testenv.Update(t, k, b, func() {
				if b.Annotations == nil {
					b.Annotations = map[string]string{}
				}
				b.Annotations[v1alpha1.AnnotationAllowEmptyRender] = "true"
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testenv.Namespace(t, k)
			b := bundle(t, "empty-"+ns, onOff())
			comp := composition(ns, "app", b.Name, `{}`)
			mustCreate(t, comp)
			a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
			bb := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}
			condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

			update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"enabled":false}`) })
			stalled(t, ns, "app", v1alpha1.ReasonEmptyRender, "ConfigMap/"+ns+"/a", v1alpha1.AnnotationAllowEmptyRender)
			consistently(t, "every member to stay", 2*time.Second, func() (bool, error) {
				if err := k.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
					return false, err
				}
				return true, k.Get(ctx, client.ObjectKeyFromObject(bb), bb)
			})

			tt.optIn(t, comp, b)
			gone(t, a)
			gone(t, bb)
			condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		})
	}
}

// TestOnePrunedEventPerPass: a pass that prunes three members records one
// Pruned event that names all three, with one of them as related object.
func TestOnePrunedEventPerPass(t *testing.T) {
	ns := testenv.Namespace(t, k)
	files := map[string]string{
		"values.yaml":         "extra: true\n",
		"templates/keep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n",
	}
	for _, n := range []string{"x1", "x2", "x3"} {
		files["templates/"+n+".yaml"] = "{{- if .Values.extra }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + n + "\n{{- end }}\n"
	}
	b := bundle(t, "events-"+ns, files)
	comp := composition(ns, "app", b.Name, `{}`)
	mustCreate(t, comp)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	// Three of four members: past the prune budget, which the parent lifts.
	update(t, comp, func(c *v1alpha1.Composition) {
		c.Spec.Values.Raw = []byte(`{"extra":false}`)
		c.Annotations = map[string]string{v1alpha1.AnnotationAllowPrune: "true"}
	})
	for _, n := range []string{"x1", "x2", "x3"} {
		gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}})
	}

	want := "pruned 3: ConfigMap/" + ns + "/x1 pruned, ConfigMap/" + ns + "/x2 pruned, ConfigMap/" + ns + "/x3 pruned"
	eventually(t, "one Pruned event naming the three members", func() (bool, error) {
		evs := env.Events(t, ns, v1alpha1.ReasonPruned)
		if len(evs) != 1 {
			return false, fmt.Errorf("%d Pruned events, want 1", len(evs))
		}
		e := evs[0]
		if e.Note != want || e.Related == nil || e.Related.Kind != "ConfigMap" || !slices.Contains([]string{"x1", "x2", "x3"}, e.Related.Name) {
			return false, fmt.Errorf("Pruned event %q related to %+v, want %q related to a pruned ConfigMap", e.Note, e.Related, want)
		}
		return true, nil
	})
}

// TestOneAppliedEventPerPass: the first pass, which creates four members,
// records no Applied event (its status says it); each later pass that configures a member
// records an Applied event of its own, even when the Composition itself
// did not change in between (its status is the same), so no pass's note is
// lost to an earlier one's series.
func TestOneAppliedEventPerPass(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "applied-"+ns, fourKinds())
	mustCreate(t, composition(ns, "app", b.Name, ""))
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	applied := func(want ...string) {
		t.Helper()
		eventually(t, fmt.Sprintf("%d Applied events", len(want)), func() (bool, error) {
			var got []string
			for _, e := range env.Events(t, ns, v1alpha1.ReasonApplied) {
				if e.Related == nil || e.Related.Namespace != ns {
					return false, fmt.Errorf("Applied event %q related to %+v, want a member", e.Note, e.Related)
				}
				got = append(got, e.Note)
			}
			slices.Sort(got)
			return slices.Equal(got, want), fmt.Errorf("Applied events %q, want %q", got, want)
		})
	}
	// The first pass, which only created, records none (its status's
	// transition says it; see status.Events.FirstPass).
	controller.Settle(t, ns)
	applied()

	// Two drifts, one after the other, of two members: each is undone by a
	// pass of its own that leaves the Composition as it was.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	if err := updateFresh(ctx, cm, func() error { cm.Data["v"] = "drift"; return k.Update(ctx, cm) }); err != nil {
		t.Fatal(err)
	}
	configuredCM := "configured 1: ConfigMap/" + ns + "/app configured (data.v)"
	applied(configuredCM)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}
	if err := updateFresh(ctx, secret, func() error { secret.Data["v"] = []byte("drift"); return k.Update(ctx, secret) }); err != nil {
		t.Fatal(err)
	}
	applied(configuredCM, "configured 1: Secret/"+ns+"/app configured (data.v)")
}

// TestInvalidObjectIsNotRetried: an object the API server rejects as
// invalid stalls the Composition with reason Invalid, naming the object and
// the field, and is not written again while nothing changes, even when a
// member's event brings the Composition back.
func TestInvalidObjectIsNotRetried(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "invalid-"+ns, map[string]string{
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
		"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  ports:\n  - port: 700000\n",
	})
	comp := composition(ns, "app", b.Name, "")
	mustCreate(t, comp)
	stalled(t, ns, "app", v1alpha1.ReasonInvalid, "Service/"+ns+"/svc", "spec.ports[0].port")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}}
	exists(t, cm)
	// The first pass's writes (its status, its events) are done; only
	// this namespace's requests are this test's (other tests' parents,
	// gone or going, may still have passes).
	controller.Settle(t, ns)
	mark, renders := controller.Mark(), controller.Renders(ns, "app")
	// A change to a member brings the Composition back: it must not retry.
	// The pass it brings renders (no memo keeps a pass that stalled), and
	// then finds the failure it remembers for these inputs.
	if err := updateFresh(ctx, cm, func() error { cm.Labels["touched"] = "yes"; return k.Update(ctx, cm) }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pass the member's change brings", func() (bool, error) {
		return controller.Renders(ns, "app") > renders, nil
	})
	controller.Settle(t, ns)
	// Nothing written in the namespace: no status, no event and no apply
	// of the Service (a failed apply is a request too).
	if w := writesIn(controller, mark, ns); len(w) > 0 {
		t.Errorf("the controller sent %d writes for a Stalled Composition whose inputs did not change: %q", len(w), w)
	}

	// A fixed input (a new Bundle revision) is applied.
	testenv.Update(t, k, b, func() {
		b.Spec.Files["templates/svc.yaml"] = strings.Replace(b.Spec.Files["templates/svc.yaml"], "700000", "80", 1)
	})
	exists(t, service(ns, "svc"))
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
}

// TestFlapping: another field manager fights over a field stencil sets.
// After a few rounds the Composition stalls with reason Flapping, naming
// the member and the field, and stencil stops writing it until its inputs
// change.
func TestFlapping(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "flap-"+ns, map[string]string{
		"values.yaml":           "a: \"1\"\n",
		"templates/flappy.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: flappy\ndata:\n  a: {{ .Values.a | quote }}\n",
	})
	comp := composition(ns, "app", b.Name, `{}`)
	mustCreate(t, comp)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// The fighter writes data.a back whenever stencil has changed it,
	// until the test stops it (at most testenv.Timeout: a loaded
	// controller may take a while to count the rounds that stall it).
	fightCtx, stop := context.WithTimeout(ctx, testenv.Timeout)
	defer stop()
	fought := make(chan struct{})
	go func() {
		defer close(fought)
		for fightCtx.Err() == nil {
			cm := &corev1.ConfigMap{}
			if err := k.Get(fightCtx, key(ns, "flappy"), cm); err == nil && cm.Data["a"] != "fought" {
				cm.Data["a"] = "fought"
				_ = k.Update(fightCtx, cm, client.FieldOwner("fighter"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stalled(t, ns, "app", v1alpha1.ReasonFlapping, "ConfigMap/"+ns+"/flappy", "data.a")
	// Stencil's last write may be a few milliseconds old: let the fighter
	// answer it, then stencil must not write again.
	last := &corev1.ConfigMap{}
	eventually(t, "the fighter's value", func() (bool, error) {
		err := k.Get(ctx, key(ns, "flappy"), last)
		return err == nil && last.Data["a"] == "fought", err
	})
	// The fighter answers any write of stencil's within milliseconds, so
	// its value alone could hide one: the member's resourceVersion tells
	// that nobody wrote it at all.
	consistently(t, "stencil to stop writing the member", 2*time.Second, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := k.Get(ctx, key(ns, "flappy"), cm); err != nil {
			return false, err
		}
		if cm.ResourceVersion != last.ResourceVersion {
			return false, fmt.Errorf("written again: resourceVersion %s → %s, data %v", last.ResourceVersion, cm.ResourceVersion, cm.Data)
		}
		return true, nil
	})
	stop()
	<-fought

	// New inputs: stencil writes again.
	update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"a":"2"}`) })
	eventually(t, "the new value to be applied", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := k.Get(ctx, key(ns, "flappy"), cm)
		return err == nil && cm.Data["a"] == "2", err
	})
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
}
