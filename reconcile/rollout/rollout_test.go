package rollout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// versioned is a Bundle's files whose ConfigMap "cfg-<name>" says
// version v.
func versioned(v string) map[string]string {
	return map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{{ .Composition.Name }}\ndata:\n  version: \"" + v + "\"\n",
	}
}

// setFiles replaces b's files.
func setFiles(t *testing.T, b *v1alpha1.Bundle, files map[string]string, more ...func(*v1alpha1.Bundle)) {
	t.Helper()
	if err := env.Retry(context.Background(), b, func() error {
		b.Spec.Files = files
		for _, m := range more {
			m(b)
		}
		return env.Update(context.Background(), b)
	}); err != nil {
		t.Fatalf("update Bundle %s: %v", b.Name, err)
	}
}

// versions counts the parents' ConfigMaps by the version they say.
func versions(t *testing.T, ns string) map[string]int {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := env.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "cfg-") {
			out[cm.Data["version"]]++
		}
	}
	return out
}

// rolloutOf waits until b's rollout (unsharded) meets cond, and returns it.
func rolloutOf(t *testing.T, b *v1alpha1.Bundle, what string, cond func(st v1alpha1.RolloutStatus) bool) v1alpha1.RolloutStatus {
	t.Helper()
	var st v1alpha1.RolloutStatus
	testenv.Eventually(t, 0, what, func() (bool, error) {
		if err := env.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		for _, r := range b.Status.Rollouts {
			if r.Shard == "" {
				st = r
				return cond(r), fmt.Errorf("rollout %+v", r)
			}
		}
		return false, fmt.Errorf("no rollout in %+v", b.Status)
	})
	return st
}

// currentRevision waits for b's current revision to be recorded and
// returns its name.
func currentRevision(t *testing.T, b *v1alpha1.Bundle) string {
	t.Helper()
	var name string
	testenv.Eventually(t, 0, "the revision of Bundle "+b.Name, func() (bool, error) {
		if err := env.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		if b.Status.ObservedGeneration != b.Generation || b.Status.Revision == "" {
			return false, fmt.Errorf("status %+v", b.Status)
		}
		name = revision.Name(b.Name, b.Status.Revision)
		return env.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.BundleRevision{}) == nil, nil
	})
	return name
}

func annotate(t *testing.T, b *v1alpha1.Bundle, key, value string) {
	t.Helper()
	if err := env.Retry(context.Background(), b, func() error {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[key] = value
		return env.Update(context.Background(), b)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutInWaves: a change of a Bundle whose rollout is in waves moves
// one parent, then two, then the rest, each wave held by its soak until
// promoted; a revision that fails to render is rolled back in the wave
// that meets it, and every other parent stays on the revision before.
func TestRolloutInWaves(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "waves-"+ns, versioned("1"), func(s *v1alpha1.BundleSpec) {
		s.Rollout = &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves, Soak: &metav1.Duration{Duration: time.Hour},
			Batch: v1alpha1.RolloutBatch{Size: ptr.To(intstr.FromInt32(1)), Growth: v1alpha1.GrowthExponential, Factor: 2}}
	})
	for i := range 5 {
		env.MustCreate(t, suite.Composition(ns, fmt.Sprintf("p%d", i), b.Name, ""))
	}
	for i := range 5 {
		env.Condition(t, ns, fmt.Sprintf("p%d", i), v1alpha1.ConditionReady, metav1.ConditionTrue)
	}
	rev1 := currentRevision(t, b)
	rolloutOf(t, b, "revision 1 stable", func(st v1alpha1.RolloutStatus) bool { return st.Stable == rev1 && st.Ready == 5 })

	setFiles(t, b, versioned("2"))
	rev2 := currentRevision(t, b)
	st := rolloutOf(t, b, "wave 1 soaking", func(st v1alpha1.RolloutStatus) bool {
		return st.Target == rev2 && st.Wave == 1 && st.WaveReady != nil
	})
	if st.Waves != 3 || st.Updated != 1 {
		t.Errorf("wave 1: %+v, want 3 waves (1, 2, 2) and 1 parent updated", st)
	}
	if got := versions(t, ns); got["2"] != 1 || got["1"] != 4 {
		t.Fatalf("ConfigMaps by version %v during wave 1's soak", got)
	}
	annotate(t, b, v1alpha1.AnnotationRolloutPromote, "1")
	rolloutOf(t, b, "wave 2 soaking", func(st v1alpha1.RolloutStatus) bool { return st.Wave == 2 && st.WaveReady != nil })
	if got := versions(t, ns); got["2"] != 3 {
		t.Fatalf("ConfigMaps by version %v during wave 2's soak", got)
	}
	annotate(t, b, v1alpha1.AnnotationRolloutPromote, "2")
	rolloutOf(t, b, "wave 3 soaking", func(st v1alpha1.RolloutStatus) bool { return st.Wave == 3 && st.WaveReady != nil })
	annotate(t, b, v1alpha1.AnnotationRolloutPromote, "3")
	rolloutOf(t, b, "revision 2 rolled out", func(st v1alpha1.RolloutStatus) bool {
		return st.Phase == v1alpha1.RolloutComplete && st.Stable == rev2 && st.Ready == 5
	})
	if got := versions(t, ns); got["2"] != 5 {
		t.Fatalf("ConfigMaps by version %v after the rollout", got)
	}
	testenv.Eventually(t, 0, "revision 2 counting 5 parents, Ready", func() (bool, error) {
		rev := &v1alpha1.BundleRevision{}
		err := env.Get(context.Background(), client.ObjectKey{Name: rev2}, rev)
		return err == nil && rev.Status.Parents == 5 && rev.Status.Ready == 5, fmt.Errorf("status %+v (%v)", rev.Status, err)
	})

	// A revision that does not render stops in wave 1: rolled back.
	setFiles(t, b, map[string]string{"templates/cm.yaml": "{{ fail \"boom\" }}\n"}, func(b *v1alpha1.Bundle) {
		b.Spec.Rollout.Soak = nil
	})
	st = rolloutOf(t, b, "the broken revision rolled back", func(st v1alpha1.RolloutStatus) bool { return st.Phase == v1alpha1.RolloutRolledBack })
	if st.Wave != 1 || len(st.Failed) != 1 || st.Failed[0].Reason != v1alpha1.ReasonRenderFailed {
		t.Errorf("rolled back %+v, want wave 1 naming its parent and RenderFailed", st)
	}
	for i := range 5 {
		c := env.Condition(t, ns, fmt.Sprintf("p%d", i), v1alpha1.ConditionReady, metav1.ConditionTrue)
		if rh := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionRevisionHeld); rh != nil {
			t.Errorf("p%d RevisionHeld %+v: a parent that follows the rollout has none", i, rh)
		}
	}
	if got := versions(t, ns); got["2"] != 5 {
		t.Errorf("ConfigMaps by version %v after the rollback", got)
	}
}

// TestRevisionPins: a pinned Composition stays on its revision while its
// Bundle changes; a pin of a withdrawn revision follows the Bundle, one of
// no revision stalls.
func TestRevisionPins(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "pins-"+ns, versioned("1"))
	env.MustCreate(t, suite.Composition(ns, "follow", b.Name, ""))
	env.Condition(t, ns, "follow", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	pinned := suite.Composition(ns, "pinned", b.Name, "")
	pinned.Spec.BundleRevision = rev1
	env.MustCreate(t, pinned)
	env.Condition(t, ns, "pinned", v1alpha1.ConditionReady, metav1.ConditionTrue)

	setFiles(t, b, versioned("2"))
	currentRevision(t, b)
	testenv.Eventually(t, 0, "the follower on revision 2, the pinned one on 1", func() (bool, error) {
		cm1, cm2 := &corev1.ConfigMap{}, &corev1.ConfigMap{}
		if err := env.Get(context.Background(), suite.Key(ns, "cfg-follow"), cm1); err != nil {
			return false, err
		}
		if err := env.Get(context.Background(), suite.Key(ns, "cfg-pinned"), cm2); err != nil {
			return false, err
		}
		return cm1.Data["version"] == "2" && cm2.Data["version"] == "1", fmt.Errorf("follow %s, pinned %s", cm1.Data["version"], cm2.Data["version"])
	})
	revisionHeld(t, ns, "pinned", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonPinned && rc.Status == metav1.ConditionTrue && strings.Contains(rc.Message, rev1)
	})
	testenv.Eventually(t, 0, "revision 1 counting its pin", func() (bool, error) {
		rev := &v1alpha1.BundleRevision{}
		err := env.Get(context.Background(), client.ObjectKey{Name: rev1}, rev)
		return err == nil && rev.Status.Pinned == 1 && rev.Status.Parents == 1, fmt.Errorf("%+v (%v)", rev.Status, err)
	})

	// Withdrawn: the pinned Composition follows the Bundle.
	if err := env.Retry(context.Background(), b, func() error {
		b.Spec.Revisions = &v1alpha1.RevisionPolicy{Withdrawn: []string{rev1}}
		return env.Update(context.Background(), b)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 0, "the pin of a withdrawn revision to follow the Bundle", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(context.Background(), suite.Key(ns, "cfg-pinned"), cm)
		return err == nil && cm.Data["version"] == "2", err
	})
	revisionHeld(t, ns, "pinned", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonPinRefused && rc.Status == metav1.ConditionFalse && strings.Contains(rc.Message, "withdrawn")
	})

	// A pin of no revision stalls.
	env.UpdateComposition(t, pinned, func(c *v1alpha1.Composition) { c.Spec.BundleRevision = b.Name + "-0000000000" })
	env.Condition(t, ns, "pinned", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRevisionNotFound)
}

// TestRefusedValuesStayOnTheirRevision: a revision whose schema refuses a
// parent's values is reported on the Bundle before any parent moves, and
// where the Bundle allows holding (spec.revisions.holding), that parent
// stays on its revision while the others move.
func TestRefusedValuesStayOnTheirRevision(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "held-"+ns, versioned("1"), func(s *v1alpha1.BundleSpec) {
		s.Revisions = &v1alpha1.RevisionPolicy{Holding: v1alpha1.HoldingAllowed}
	})
	env.MustCreate(t, suite.Composition(ns, "ok", b.Name, `{"port": 80}`))
	env.MustCreate(t, suite.Composition(ns, "old", b.Name, `{}`))
	env.Condition(t, ns, "ok", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Condition(t, ns, "old", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rev1 := currentRevision(t, b)
	setFiles(t, b, versioned("2"), func(b *v1alpha1.Bundle) {
		b.Spec.Schema = &apiextensionsv1.JSON{Raw: []byte(`{"type":"object","required":["port"],"properties":{"port":{"type":"integer"}}}`)}
	})
	// Held, and the other parent Ready on the new revision: its pass
	// applied it (a parent is counted updated once its status names the
	// revision, Ready once that pass is done).
	st := rolloutOf(t, b, "one parent held, the other Ready on the new revision", func(st v1alpha1.RolloutStatus) bool {
		return st.Held == 1 && st.Updated == 1 && st.Ready == 1
	})
	if len(st.HeldParents) != 1 || st.HeldParents[0].Name != "old" || !strings.Contains(st.HeldParents[0].Message, "port") {
		t.Errorf("held %+v", st.HeldParents)
	}
	revisionHeld(t, ns, "old", func(rc *metav1.Condition) bool {
		return rc.Reason == v1alpha1.ReasonValuesRefused && strings.Contains(rc.Message, rev1) && strings.Contains(rc.Message, "port")
	})
	if got := versions(t, ns); got["1"] != 1 || got["2"] != 1 {
		t.Errorf("ConfigMaps by version %v", got)
	}
}

// revisionHeld waits until the Composition's RevisionHeld condition
// meets ok.
func revisionHeld(t *testing.T, ns, name string, ok func(*metav1.Condition) bool) {
	t.Helper()
	testenv.Eventually(t, 0, "the RevisionHeld condition of "+name, func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := env.Get(context.Background(), suite.Key(ns, name), c); err != nil {
			return false, err
		}
		rc := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionRevisionHeld)
		return rc != nil && ok(rc), fmt.Errorf("RevisionHeld %+v", rc)
	})
}

// TestAdmissionRefusesPins: the webhook refuses a pin of a revision the
// Bundle does not have, or has withdrawn, and admits one it keeps.
func TestAdmissionRefusesPins(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "adm-pins-"+ns, suite.ShopFiles(), suite.WithShopSchema)
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	env.Refusing(t, ns, b.Name)
	rev := currentRevision(t, b)

	pinned := func(name, pin string) *v1alpha1.Composition {
		c := suite.Composition(ns, name, b.Name, "")
		c.Spec.BundleRevision = pin
		return c
	}
	if msg := suite.Denied(t, env.Create(ctx, pinned("nowhere", b.Name+"-0000000000"))); !strings.Contains(msg, "does not have") {
		t.Errorf("refusal %q: want it to say the Bundle does not have the revision", msg)
	}
	// The webhook knows the revisions its cache holds: one just recorded
	// may reach it a moment after the API server has it.
	testenv.Eventually(t, 0, "a pin of a kept revision admitted", func() (bool, error) {
		err := env.Create(ctx, pinned("kept", rev), client.DryRunAll)
		return err == nil, err
	})
	env.UpdateBundle(t, b.Name, func(s *v1alpha1.BundleSpec) { s.Revisions = &v1alpha1.RevisionPolicy{Withdrawn: []string{rev}} })
	testenv.Eventually(t, 0, "a pin of the withdrawn revision refused", func() (bool, error) {
		err := env.Create(ctx, pinned("withdrawn", rev), client.DryRunAll)
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "withdrawn"), err
	})
}

// TestAdmissionBundleDryRun: a server dry run of a Bundle says how many of
// its parents the new content would change and fail to render; gates
// that do not compile are refused.
func TestAdmissionBundleDryRun(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "adm-dry-"+ns, versioned("1"))
	for i := range 3 {
		env.MustCreate(t, suite.Composition(ns, fmt.Sprintf("p%d", i), b.Name, ""))
	}
	for i := range 3 {
		env.Condition(t, ns, fmt.Sprintf("p%d", i), v1alpha1.ConditionReady, metav1.ConditionTrue)
	}
	currentRevision(t, b)
	c, warnings := env.WarningClient(t)
	var got []string
	testenv.Eventually(t, 0, "the dry run of a new content to be counted", func() (bool, error) {
		warnings.Take()
		err := env.Retry(ctx, b, func() error {
			b.Spec.Files = versioned("2")
			return c.Update(ctx, b, client.DryRunAll)
		})
		got = warnings.Take()
		return err == nil && slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "3 would change") }), fmt.Errorf("warnings %q (%v)", got, err)
	})
	if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "reach its 3 parents all at once") }) {
		t.Errorf("warnings %q: want the wave plan", got)
	}
	testenv.Eventually(t, 0, "the dry run of a broken content", func() (bool, error) {
		warnings.Take()
		err := env.Retry(ctx, b, func() error {
			b.Spec.Files = map[string]string{"templates/cm.yaml": "{{ fail \"boom\" }}\n"}
			return c.Update(ctx, b, client.DryRunAll)
		})
		got = warnings.Take()
		return err == nil && slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "3 would fail to render") }) &&
			slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, "would fail to render: "+ns+"/p0") }), fmt.Errorf("warnings %q (%v)", got, err)
	})
	if got := versions(t, ns); got["1"] != 3 {
		t.Errorf("ConfigMaps by version %v: a dry run changed them", got)
	}
	err := env.Retry(ctx, b, func() error {
		b.Spec.Rollout = &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves, Gates: []v1alpha1.RolloutGate{{Name: "bad", Expression: "wave.nope +"}}}
		return env.Update(ctx, b)
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.rollout.gates[0] (bad)") {
		t.Errorf("a gate that does not compile: %v, want it refused naming it", err)
	}
}

// TestRolloutOfInstances: the instances of a published kind roll out in
// waves as Compositions do (the rollout controller lists them from the
// kind's controller), and one pins a revision with its annotation.
func TestRolloutOfInstances(t *testing.T) {
	ctx := context.Background()
	ns, group, name, _ := env.ServeGadgets(t, "roll")
	b := &v1alpha1.Bundle{}
	if err := env.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		env.MustCreate(t, suite.Gadget(group, ns, fmt.Sprintf("g%d", i), `{"size": 1}`))
	}
	for i := range 3 {
		env.InstanceReady(t, group, ns, fmt.Sprintf("g%d", i), metav1.ConditionTrue)
	}
	rev1 := currentRevision(t, b)
	rolloutOf(t, b, "revision 1 stable, with the three instances", func(st v1alpha1.RolloutStatus) bool {
		return st.Stable == rev1 && st.Ready == 3
	})
	pinned := suite.Gadget(group, ns, "pinned", `{"size": 2}`)
	pinned.SetAnnotations(map[string]string{publish.AnnotationBundleRevision: rev1})
	env.MustCreate(t, pinned)
	env.InstanceReady(t, group, ns, "pinned", metav1.ConditionTrue)

	if err := env.Retry(ctx, b, func() error {
		b.Spec.Files = suite.GadgetFiles("\n  wave: \"2\"")
		b.Spec.Rollout = &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves, Soak: &metav1.Duration{Duration: time.Hour}}
		return env.Update(ctx, b)
	}); err != nil {
		t.Fatal(err)
	}
	rev2 := currentRevision(t, b)
	st := rolloutOf(t, b, "wave 1 of the instances soaking", func(st v1alpha1.RolloutStatus) bool {
		return st.Target == rev2 && st.Wave == 1 && st.WaveReady != nil
	})
	if st.Parents != 3 || st.Updated != 1 || st.Waves != 2 {
		t.Errorf("rollout %+v: want 3 followers (the pinned one is not), 1 updated, 2 waves", st)
	}
	moved := 0
	for _, n := range []string{"g0", "g1", "g2", "pinned"} {
		cm := &corev1.ConfigMap{}
		if err := env.Get(ctx, suite.Key(ns, n+"-conf"), cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["wave"] == "2" {
			moved++
			if n == "pinned" {
				t.Errorf("the pinned instance moved")
			}
		}
	}
	if moved != 1 {
		t.Errorf("%d instances on revision 2 during wave 1's soak, want 1", moved)
	}
}

// TestRevisionCountsShowZero: a revision no parent is on has its counts
// written as 0 (kubectl get bundlerevisions prints them), not absent.
func TestRevisionCountsShowZero(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "zero-"+ns, versioned("1"))
	name := currentRevision(t, b)
	testenv.Eventually(t, 0, "revision "+name+" with its counts written", func() (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("BundleRevision"))
		if err := env.Get(context.Background(), client.ObjectKey{Name: name}, u); err != nil {
			return false, err
		}
		parents, hasParents, _ := unstructured.NestedInt64(u.Object, "status", "parents")
		ready, hasReady, _ := unstructured.NestedInt64(u.Object, "status", "ready")
		return hasParents && hasReady && parents == 0 && ready == 0, fmt.Errorf("status %v", u.Object["status"])
	})
}

// TestRolloutOrderKey: the controller ranks the parents of rollouts by a
// key of its own, kept in a Secret of its namespace that it made: no
// tenant computes a parent's place in the batches.
func TestRolloutOrderKey(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "order-"+ns, versioned("1"), func(s *v1alpha1.BundleSpec) {
		s.Rollout = &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves}
	})
	env.MustCreate(t, suite.Composition(ns, "p", b.Name, ""))
	env.Condition(t, ns, "p", v1alpha1.ConditionReady, metav1.ConditionTrue)
	rolloutOf(t, b, "the rollout recorded", func(st v1alpha1.RolloutStatus) bool { return st.Stable != "" })
	s := &corev1.Secret{}
	if err := env.Get(context.Background(), client.ObjectKey{Namespace: testenv.ControllerNamespace, Name: rollout.OrderSecret}, s); err != nil {
		t.Fatalf("the rollout order's Secret: %v", err)
	}
	if key := s.Data[rollout.OrderSecretKey]; len(key) != 32 || s.Labels["app.kubernetes.io/managed-by"] != "stencil" {
		t.Errorf("Secret %s: %d bytes of key, labels %v; want 32 bytes, made by stencil", s.Name, len(key), s.Labels)
	}
}
