package reconcile_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// gadgetFiles render one ConfigMap per instance from its spec.
func gadgetFiles(extra string) map[string]string {
	return map[string]string{
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-conf
data:
  size: {{ .Values.size | quote }}
  kind: {{ .Composition.Kind | quote }}` + extra + "\n",
	}
}

const gadgetSchema = `{"type":"object","required":["size"],"properties":{
  "size":{"type":"integer","minimum":1,"maximum":10,"description":"how many"},
  "color":{"type":"string","enum":["red","blue"]}}}`

// publishing returns a Bundle spec mutation that publishes kind Gadget in group.
func publishing(group string, change ...func(*v1alpha1.BundleAPI)) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(gadgetSchema)}
		s.API = &v1alpha1.BundleAPI{Group: group, Kind: "Gadget", Version: "v1"}
		for _, c := range change {
			c(s.API)
		}
	}
}

// grantKind does what a cluster admin does for a published kind: the
// ClusterRole `stencil bundle rbac` prints, aggregated to the
// controller's (aggregated here by hand: envtest runs no aggregation
// controller).
func grantKind(t *testing.T, group, plural string) {
	t.Helper()
	grantRules(t, "stencil-published-"+plural+"."+group, kindRules(group, plural, true)...)
}

// kindRules are the rules of a published kind's ClusterRole: the
// instances, their status and finalizers, and, withBinding, the kind's
// binding of stencil's admission policy by name (publish.ClusterRoles).
func kindRules(group, plural string, withBinding bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{plural, plural + "/status", plural + "/finalizers"},
		Verbs: []string{"get", "list", "watch", "update", "patch"}}}
	if withBinding {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicybindings"},
			ResourceNames: []string{publish.AccessBindingName(schema.GroupResource{Group: group, Resource: plural})}, Verbs: []string{"update", "patch", "delete"}})
	}
	return rules
}

// grantRules aggregates a ClusterRole name of rules to the controller's,
// until the test ends.
func grantRules(t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rbac.stencil.dev/aggregate-to-manager": "true"}},
		Rules:      rules,
	}
	mustCreate(t, role)
	if err := aggregate(context.Background(), k, "stencil-apply"); err != nil {
		t.Fatalf("aggregate: %v", err)
	}
	t.Cleanup(func() {
		_ = k.Delete(context.Background(), role)
		_ = aggregate(context.Background(), k, "stencil-apply")
	})
}

func gadgetGVK(group string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
}

func gadget(group, ns, name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gadgetGVK(group))
	u.SetNamespace(ns)
	u.SetName(name)
	if spec != "" {
		u.Object["spec"] = mustJSON(spec)
	}
	return u
}

func mustJSON(s string) map[string]any {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"X","spec":` + s + `}`)); err != nil {
		panic(err)
	}
	return u.Object["spec"].(map[string]any)
}

// bundleReady waits until the Bundle's Ready has status want at its
// generation, with reason unless it is "", and returns its condition: a
// Ready of another reason on the way (Establishing while the kind's CRD
// is made) is waited out.
func bundleReady(t *testing.T, name string, want metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := testenv.Condition{Type: v1alpha1.ConditionReady, Status: want}
	if reason != "" {
		c.Reasons = []string{reason}
	}
	return *testenv.WaitFor(t, k, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}, 0, c)
}

// instanceReady waits until the instance's Ready condition is want for its
// generation, with one of reasons when any are given, and returns the
// instance as it then was.
func instanceReady(t *testing.T, group, ns, name string, want metav1.ConditionStatus, reasons ...string) *unstructured.Unstructured {
	t.Helper()
	u := gadget(group, ns, name, "")
	testenv.WaitFor(t, k, u, 0, testenv.Condition{Type: v1alpha1.ConditionReady, Status: want, Reasons: reasons})
	return u
}

// kindChecked waits until the API server admits an instance of the
// Gadget kind of group in ns, and stencil's admission policy checks the
// kind (testenv.WaitKindChecked): a Bundle's Ready says the kind's CRD is
// Established and served by the controller, not that the API server's
// discovery lists it yet, nor that the kind's binding and parameters of
// the policy, which the Bundle controller wrote, apply in the API server.
func kindChecked(t *testing.T, group, ns string) {
	t.Helper()
	testenv.WaitKindChecked(t, k, gadget(group, ns, testenv.AdmissionProbe, `{"size":1}`), 0)
}

// servedGadgets publishes kind Gadget from a Bundle named prefix-<ns> in
// group prefix-<ns>.example.com, granted to the controller, and waits until
// the Bundle says it serves it and the API server admits and checks its
// instances (kindChecked). It returns the test's namespace, the group,
// the Bundle's name and its Ready condition.
func servedGadgets(t *testing.T, prefix string, change ...func(*v1alpha1.BundleAPI)) (ns, group, name string, ready metav1.Condition) {
	t.Helper()
	ns = testenv.Namespace(t, k)
	group = prefix + "-" + ns + ".example.com"
	grantKind(t, group, "gadgets")
	b := bundle(t, prefix+"-"+ns, gadgetFiles(""), publishing(group, change...))
	ready = bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	kindChecked(t, group, ns)
	return ns, group, b.Name, ready
}

// TestPublishedKind: a Bundle with spec.api gets a CRD for its kind, the
// API server checks instances against the values schema, and an instance
// reconciles as a Composition would: its ApplySet id is its own kind's,
// its children are pruned and deleted with it.
func TestPublishedKind(t *testing.T) {
	ctx := context.Background()
	ns, group, name, cond := servedGadgets(t, "gadgets", func(a *v1alpha1.BundleAPI) { a.ShortNames = []string{"wd"} })
	if !strings.Contains(cond.Message, "publishes Gadget."+group+"/v1") {
		t.Errorf("Bundle Ready message = %q, want it to say what it publishes", cond.Message)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil {
		t.Fatalf("the CRD of the published kind: %v", err)
	}
	if crd.Labels["applyset.kubernetes.io/is-parent-type"] != "true" || crd.Labels["stencil.dev/bundle"] != name {
		t.Errorf("CRD labels = %v, want the ApplySet parent-type label and the Bundle's", crd.Labels)
	}
	if v := crd.Spec.Versions[0]; v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("CRD version %s has no status subresource", v.Name)
	}
	var columns []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name)
	}
	if !slices.Contains(columns, "Ready") || !slices.Contains(columns, "Status") {
		t.Errorf("CRD printer columns %v, want Ready and Status as Compositions have", columns)
	}
	if !slices.Contains(crd.Spec.Names.ShortNames, "wd") {
		t.Errorf("CRD short names %v, want wd", crd.Spec.Names.ShortNames)
	}

	// Admission checks the values: the API server refuses, naming the field.
	err := k.Create(ctx, gadget(group, ns, "bad", `{"size":0}`))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Fatalf("create of a Gadget with size 0: %v, want Invalid naming spec.size", err)
	}

	mustCreate(t, gadget(group, ns, "w1", `{"size":3}`))
	inst := instanceReady(t, group, ns, "w1", metav1.ConditionTrue)
	id := applyset.ID("w1", ns, schema.GroupKind{Group: group, Kind: "Gadget"})
	if inst.GetLabels()[applyset.LabelApplySetID] != id {
		t.Errorf("instance ApplySet id = %q, want %q (from its own kind)", inst.GetLabels()[applyset.LabelApplySetID], id)
	}
	cm := &corev1.ConfigMap{}
	if err := k.Get(ctx, key(ns, "w1-conf"), cm); err != nil {
		t.Fatalf("the instance's ConfigMap: %v", err)
	}
	if cm.Labels[applyset.LabelPartOf] != id || cm.Data["size"] != "3" || cm.Data["kind"] != "Gadget" {
		t.Errorf("ConfigMap labels %v data %v, want part-of %s, size 3, kind Gadget", cm.Labels, cm.Data, id)
	}

	// A member changed out of band is put back.
	if err := updateFresh(ctx, cm, func() error { cm.Data["size"] = "99"; return k.Update(ctx, cm) }); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap put back", func() (bool, error) {
		err := k.Get(ctx, key(ns, "w1-conf"), cm)
		return err == nil && cm.Data["size"] == "3", err
	})

	// A per-instance annotation overrides the Bundle's defaults.
	patchInstance(t, gadget(group, ns, "w1", ""), `{"metadata":{"annotations":{"stencil.dev/suspend":"true"}}}`)
	// An annotation does not change the generation: the Ready=False to
	// wait for is the one of the suspension, not any other on the way.
	instanceReady(t, group, ns, "w1", metav1.ConditionFalse, v1alpha1.ReasonSuspended)
	// A bad knob annotation is refused by stencil's admission policy,
	// whose check of the ServiceAccount reads the annotations too.
	err = k.Patch(ctx, gadget(group, ns, "w1", ""), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"stencil.dev/suspend":"nope"}}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "stencil.dev/suspend") {
		t.Errorf("a bad knob annotation: %v, want it refused as Invalid, naming it", err)
	}
	patchInstance(t, gadget(group, ns, "w1", ""), `{"metadata":{"annotations":{"stencil.dev/suspend":null}}}`)
	instanceReady(t, group, ns, "w1", metav1.ConditionTrue)

	// Deleting the instance deletes its children.
	if err := k.Delete(ctx, gadget(group, ns, "w1", "")); err != nil {
		t.Fatal(err)
	}
	gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1-conf"}})
	gone(t, gadget(group, ns, "w1", ""))
}

func patchInstance(t *testing.T, u *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := k.Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patch %s: %v", u.GetName(), err)
	}
}

// TestPublishedKindFollowsItsBundle: a new template rolls every instance,
// and a new schema changes the CRD (and so what admission accepts).
func TestPublishedKindFollowsItsBundle(t *testing.T) {
	ctx := context.Background()
	ns, group, name, _ := servedGadgets(t, "follow")
	for _, n := range []string{"a", "b"} {
		mustCreate(t, gadget(group, ns, n, `{"size":2}`))
		instanceReady(t, group, ns, n, metav1.ConditionTrue)
	}

	// A new template: every instance rolls.
	updateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.Files = gadgetFiles("\n  rolled: \"yes\"") })
	for _, n := range []string{"a", "b"} {
		eventually(t, "ConfigMap "+n+" rolled", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			err := k.Get(ctx, key(ns, n+"-conf"), cm)
			return err == nil && cm.Data["rolled"] == "yes", err
		})
	}

	// A new schema: the CRD follows, and admission with it.
	if err := k.Create(ctx, gadget(group, ns, "c", `{"size":2,"color":"green"}`)); !apierrors.IsInvalid(err) {
		t.Fatalf("create with color green: %v, want Invalid (enum red, blue)", err)
	}
	updateBundle(t, name, func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(strings.Replace(gadgetSchema, `"enum":["red","blue"]`, `"enum":["red","blue","green"]`, 1))}
	})
	eventually(t, "admission to accept color green", func() (bool, error) {
		err := k.Create(ctx, gadget(group, ns, "c", `{"size":2,"color":"green"}`))
		return err == nil, err
	})
	instanceReady(t, group, ns, "c", metav1.ConditionTrue)
}

// updateBundle changes the spec of Bundle name and writes it, again on a
// conflict: the controller writes the Bundle too (its finalizer, and its
// status, which moves its resourceVersion).
func updateBundle(t *testing.T, name string, change func(*v1alpha1.BundleSpec)) {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}
	testenv.Update(t, k, b, func() { change(&b.Spec) })
}

// TestPublishedKindRefusals: a schema that is not structural and a kind
// another Bundle publishes are refused on the Bundle, touching nothing; a
// kind the controller may not serve says what to grant.
func TestPublishedKindRefusals(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	group := "refuse-" + ns + ".example.com"
	grantKind(t, group, "gadgets")

	// A JSON Schema the bundle loads with (values are checked against it)
	// that a CRD cannot express: keys constrained by a pattern.
	notStructural := bundle(t, "ns-"+ns, gadgetFiles(""), publishing("other-"+group), func(s *v1alpha1.BundleSpec) {
		s.Schema = nil
		s.Files["values.schema.json"] = `{"type":"object","properties":{"size":{"type":"integer"},"tags":{"type":"object","patternProperties":{"^x-":{"type":"string"}}}}}`
	})
	c := bundleReady(t, notStructural.Name, metav1.ConditionFalse, v1alpha1.ReasonNotStructural)
	if !strings.Contains(c.Message, "values.schema.json#/properties/tags/patternProperties") {
		t.Errorf("Bundle with a non-structural schema: Ready %s %q, want a refusal naming the field", c.Reason, c.Message)
	}
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets.other-" + group}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("CRD of a refused schema: %v, want none", err)
	}

	first := bundle(t, "first-"+ns, gadgetFiles(""), publishing(group))
	bundleReady(t, first.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	second := bundle(t, "second-"+ns, gadgetFiles("\n  second: \"yes\""), publishing(group))
	c = bundleReady(t, second.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	if !strings.Contains(c.Message, first.Name) {
		t.Errorf("KindConflict message %q does not name the Bundle that publishes the kind", c.Message)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil || crd.Labels["stencil.dev/bundle"] != first.Name {
		t.Fatalf("CRD after a second claim: %v, labels %v, want it still the first Bundle's", err, crd.Labels)
	}
	// What admission and the CLI find for the kind: the Bundle its CRD names.
	if b, claimants, err := engine.PublishingBundle(ctx, k, k, gadgetGVK(group)); err != nil || b == nil || b.Name != first.Name || claimants != nil {
		t.Errorf("PublishingBundle of a kind two Bundles claim: %v %v %v, want %s", b, claimants, err, first.Name)
	}
	kindChecked(t, group, ns)
	mustCreate(t, gadget(group, ns, "w", `{"size":1}`))
	instanceReady(t, group, ns, "w", metav1.ConditionTrue)
	cm := &corev1.ConfigMap{}
	if err := k.Get(ctx, key(ns, "w-conf"), cm); err != nil || cm.Data["second"] != "" {
		t.Errorf("the instance rendered the second Bundle: %v %v", err, cm.Data)
	}

	ungranted := bundle(t, "ungranted-"+ns, gadgetFiles(""), publishing("ungranted-"+group))
	c = bundleReady(t, ungranted.Name, metav1.ConditionFalse, v1alpha1.ReasonForbidden)
	if !strings.Contains(c.Message, "gadgets.ungranted-"+group) || !strings.Contains(c.Message, "aggregate-to-manager") {
		t.Errorf("Forbidden message %q does not say what to grant", c.Message)
	}
}

// TestPublishedKindLifecycle: a Bundle that stops publishing leaves the
// instances and their children alone; a restarted controller serves the
// kind again; deleting a Bundle whose api.deletionPolicy is Delete deletes
// the CRD, every instance and their children.
func TestPublishedKindLifecycle(t *testing.T) {
	ctx := context.Background()
	ns, group, name, _ := servedGadgets(t, "life", func(a *v1alpha1.BundleAPI) { a.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	mustCreate(t, gadget(group, ns, "w", `{"size":4}`))
	instanceReady(t, group, ns, "w", metav1.ConditionTrue)

	// Stop publishing: nothing is deleted, nothing is applied any more,
	// and stencil's admission policy refuses the instances' changes (no
	// Bundle says what they would be written as).
	var api *v1alpha1.BundleAPI
	updateBundle(t, name, func(s *v1alpha1.BundleSpec) { api, s.API = s.API, nil })
	bundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	eventually(t, "a change of an instance of a kind no Bundle publishes to be refused", func() (bool, error) {
		err := k.Patch(ctx, gadget(group, ns, "w", ""), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":5}}`)), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "no Bundle publishes Gadget."+group), err
	})
	consistently(t, "the children of an unpublished kind left alone", 2*time.Second, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := k.Get(ctx, key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "4", err
	})
	if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRD of a kind no longer published: %v, want it kept", err)
	}

	// Publish again and restart: the new controller serves the kind.
	updateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.API = api })
	bundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	eventually(t, "the instance's change admitted again", func() (bool, error) {
		err := k.Patch(ctx, gadget(group, ns, "w", ""), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":5}}`)))
		return err == nil, err
	})
	eventually(t, "the instance applied again", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := k.Get(ctx, key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "5", err
	})
	restartController(t, func() { patchInstance(t, gadget(group, ns, "w", ""), `{"spec":{"size":6}}`) })
	eventually(t, "the restarted controller to apply the instance", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := k.Get(ctx, key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "6", err
	})

	// Delete the Bundle: its deletion policy deletes the CRD, the instance
	// and its ConfigMap.
	if err := k.Delete(ctx, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-conf"}})
	gone(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group}})
	gone(t, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// TestPublishedKindSharded: the instances of a published kind follow the
// shard label as Compositions do: the unsharded controller leaves an
// instance labelled for shard a alone, and shard a's controller serves it.
func TestPublishedKindSharded(t *testing.T) {
	ctx := context.Background()
	ns, group, _, _ := servedGadgets(t, "shard")

	// Until a controller of shard a has run once, stencil's admission
	// policy cannot tell what an instance of shard a naming no
	// ServiceAccount would be written as, and refuses it.
	inst := gadget(group, ns, "g", `{"size":1}`)
	inst.SetLabels(map[string]string{shard.Label: "never-" + ns})
	if err := k.Create(ctx, inst, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no stencil controller serves shard never-"+ns) {
		t.Errorf("an instance of a shard no controller ever served: %v, want it refused", err)
	}
	a := startShard(t, "a")
	a.Stop()

	inst = gadget(group, ns, "g", `{"size":1}`)
	inst.SetLabels(map[string]string{shard.Label: "a"})
	mustCreate(t, inst)
	consistently(t, "the unsharded controller to leave shard a's instance alone", 2*time.Second, func() (bool, error) {
		u := gadget(group, ns, "g", "")
		if err := k.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		_, hasStatus := u.Object["status"]
		err := k.Get(ctx, key(ns, "g-conf"), &corev1.ConfigMap{})
		return !hasStatus && apierrors.IsNotFound(err), nil
	})
	startShard(t, "a")
	instanceReady(t, group, ns, "g", metav1.ConditionTrue)
	if err := k.Get(ctx, key(ns, "g-conf"), &corev1.ConfigMap{}); err != nil {
		t.Errorf("shard a's instance has no ConfigMap: %v", err)
	}
}
