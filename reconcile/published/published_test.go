package published_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// TestPublishedKind: a Bundle with spec.api gets a CRD for its kind, the
// API server checks instances against the values schema, and an instance
// reconciles as a Composition would: its ApplySet id is its own kind's,
// its children are pruned and deleted with it.
func TestPublishedKind(t *testing.T) {
	ctx := context.Background()
	ns, group, name, cond := env.ServeGadgets(t, "gadgets", func(a *v1alpha1.BundleAPI) { a.ShortNames = []string{"wd"} })
	if !strings.Contains(cond.Message, "publishes Gadget."+group+"/v1") {
		t.Errorf("Bundle Ready message = %q, want it to say what it publishes", cond.Message)
	}

	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil {
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
	err := env.Create(ctx, suite.Gadget(group, ns, "bad", `{"size":0}`))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Fatalf("create of a Gadget with size 0: %v, want Invalid naming spec.size", err)
	}

	env.MustCreate(t, suite.Gadget(group, ns, "w1", `{"size":3}`))
	inst := env.InstanceReady(t, group, ns, "w1", metav1.ConditionTrue)
	id := applyset.ID("w1", ns, schema.GroupKind{Group: group, Kind: "Gadget"})
	if inst.GetLabels()[applyset.LabelApplySetID] != id {
		t.Errorf("instance ApplySet id = %q, want %q (from its own kind)", inst.GetLabels()[applyset.LabelApplySetID], id)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Get(ctx, suite.Key(ns, "w1-conf"), cm); err != nil {
		t.Fatalf("the instance's ConfigMap: %v", err)
	}
	if cm.Labels[applyset.LabelPartOf] != id || cm.Data["size"] != "3" || cm.Data["kind"] != "Gadget" {
		t.Errorf("ConfigMap labels %v data %v, want part-of %s, size 3, kind Gadget", cm.Labels, cm.Data, id)
	}
	// The instance is its members' owner, as the API serves its kind
	// (Argo CD's tree nests the ConfigMap under it).
	if refs := cm.OwnerReferences; len(refs) != 1 || refs[0].APIVersion != group+"/v1" || refs[0].Kind != "Gadget" ||
		refs[0].Name != "w1" || refs[0].UID != inst.GetUID() || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("ConfigMap owner references %+v, want the instance Gadget w1 (%s/v1, uid %s) as its controller", refs, group, inst.GetUID())
	}

	// A member changed out of band is put back.
	if err := env.Retry(ctx, cm, func() error { cm.Data["size"] = "99"; return env.Update(ctx, cm) }); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 0, "the ConfigMap put back", func() (bool, error) {
		err := env.Get(ctx, suite.Key(ns, "w1-conf"), cm)
		return err == nil && cm.Data["size"] == "3", err
	})

	// A per-instance annotation overrides the Bundle's defaults.
	env.MergePatch(t, suite.Gadget(group, ns, "w1", ""), `{"metadata":{"annotations":{"stencil.dev/suspend":"true"}}}`, "")
	// An annotation does not change the generation: the Ready=False to
	// wait for is the one of the suspension, not any other on the way.
	env.InstanceReady(t, group, ns, "w1", metav1.ConditionFalse, v1alpha1.ReasonSuspended)
	// A bad knob annotation is refused by stencil's admission policy,
	// whose check of the ServiceAccount reads the annotations too.
	err = env.Patch(ctx, suite.Gadget(group, ns, "w1", ""), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"stencil.dev/suspend":"nope"}}}`)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "stencil.dev/suspend") {
		t.Errorf("a bad knob annotation: %v, want it refused as Invalid, naming it", err)
	}
	env.MergePatch(t, suite.Gadget(group, ns, "w1", ""), `{"metadata":{"annotations":{"stencil.dev/suspend":null}}}`, "")
	env.InstanceReady(t, group, ns, "w1", metav1.ConditionTrue)

	// Deleting the instance deletes its children.
	if err := env.Delete(ctx, suite.Gadget(group, ns, "w1", "")); err != nil {
		t.Fatal(err)
	}
	env.Gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1-conf"}})
	env.Gone(t, suite.Gadget(group, ns, "w1", ""))
}

// TestPublishedKindFollowsItsBundle: a new template rolls every instance,
// and a new schema changes the CRD (and so what admission accepts).
func TestPublishedKindFollowsItsBundle(t *testing.T) {
	ctx := context.Background()
	ns, group, name, _ := env.ServeGadgets(t, "follow")
	for _, n := range []string{"a", "b"} {
		env.MustCreate(t, suite.Gadget(group, ns, n, `{"size":2}`))
		env.InstanceReady(t, group, ns, n, metav1.ConditionTrue)
	}

	// A new template: every instance rolls.
	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.Files = suite.GadgetFiles("\n  rolled: \"yes\"") })
	for _, n := range []string{"a", "b"} {
		testenv.Eventually(t, 0, "ConfigMap "+n+" rolled", func() (bool, error) {
			cm := &corev1.ConfigMap{}
			err := env.Get(ctx, suite.Key(ns, n+"-conf"), cm)
			return err == nil && cm.Data["rolled"] == "yes", err
		})
	}

	// A new schema: the CRD follows, and admission with it.
	if err := env.Create(ctx, suite.Gadget(group, ns, "c", `{"size":2,"color":"green"}`)); !apierrors.IsInvalid(err) {
		t.Fatalf("create with color green: %v, want Invalid (enum red, blue)", err)
	}
	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(strings.Replace(suite.GadgetSchema, `"enum":["red","blue"]`, `"enum":["red","blue","green"]`, 1))}
	})
	testenv.Eventually(t, 0, "admission to accept color green", func() (bool, error) {
		err := env.Create(ctx, suite.Gadget(group, ns, "c", `{"size":2,"color":"green"}`))
		return err == nil, err
	})
	env.InstanceReady(t, group, ns, "c", metav1.ConditionTrue)
}

// TestPublishedKindRefusals: a schema that is not structural and a kind
// another Bundle publishes are refused on the Bundle, touching nothing; a
// kind the controller may not serve says what to grant.
func TestPublishedKindRefusals(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	group := "refuse-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")

	// A JSON Schema the bundle loads with (values are checked against it)
	// that a CRD cannot express: keys constrained by a pattern.
	notStructural := env.Bundle(t, "ns-"+ns, suite.GadgetFiles(""), suite.Publishing("other-"+group), func(s *v1alpha1.BundleSpec) {
		s.Schema = nil
		s.Files["values.schema.json"] = `{"type":"object","properties":{"size":{"type":"integer"},"tags":{"type":"object","patternProperties":{"^x-":{"type":"string"}}}}}`
	})
	c := env.BundleReady(t, notStructural.Name, metav1.ConditionFalse, v1alpha1.ReasonNotStructural)
	if !strings.Contains(c.Message, "values.schema.json#/properties/tags/patternProperties") {
		t.Errorf("Bundle with a non-structural schema: Ready %s %q, want a refusal naming the field", c.Reason, c.Message)
	}
	if err := env.Get(ctx, client.ObjectKey{Name: "gadgets.other-" + group}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("CRD of a refused schema: %v, want none", err)
	}

	first := env.Bundle(t, "first-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
	env.BundleReady(t, first.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	second := env.Bundle(t, "second-"+ns, suite.GadgetFiles("\n  second: \"yes\""), suite.Publishing(group))
	c = env.BundleReady(t, second.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	if !strings.Contains(c.Message, first.Name) {
		t.Errorf("KindConflict message %q does not name the Bundle that publishes the kind", c.Message)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, crd); err != nil || crd.Labels["stencil.dev/bundle"] != first.Name {
		t.Fatalf("CRD after a second claim: %v, labels %v, want it still the first Bundle's", err, crd.Labels)
	}
	// What admission and the CLI find for the kind: the Bundle its CRD names.
	if b, claimants, err := engine.PublishingBundle(ctx, env.Client, env.Client, suite.GadgetGVK(group)); err != nil || b == nil || b.Name != first.Name || claimants != nil {
		t.Errorf("PublishingBundle of a kind two Bundles claim: %v %v %v, want %s", b, claimants, err, first.Name)
	}
	env.GadgetChecked(t, group, ns)
	env.MustCreate(t, suite.Gadget(group, ns, "w", `{"size":1}`))
	env.InstanceReady(t, group, ns, "w", metav1.ConditionTrue)
	cm := &corev1.ConfigMap{}
	if err := env.Get(ctx, suite.Key(ns, "w-conf"), cm); err != nil || cm.Data["second"] != "" {
		t.Errorf("the instance rendered the second Bundle: %v %v", err, cm.Data)
	}

	ungranted := env.Bundle(t, "ungranted-"+ns, suite.GadgetFiles(""), suite.Publishing("ungranted-"+group))
	c = env.BundleReady(t, ungranted.Name, metav1.ConditionFalse, v1alpha1.ReasonForbidden)
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
	ns, group, name, _ := env.ServeGadgets(t, "life", func(a *v1alpha1.BundleAPI) { a.DeletionPolicy = v1alpha1.DeletionPolicyDelete })
	env.MustCreate(t, suite.Gadget(group, ns, "w", `{"size":4}`))
	env.InstanceReady(t, group, ns, "w", metav1.ConditionTrue)

	// Stop publishing: nothing is deleted, nothing is applied any more,
	// and stencil's admission policy refuses the instances' changes (no
	// Bundle says what they would be written as).
	var api *v1alpha1.BundleAPI
	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) { api, s.API = s.API, nil })
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	testenv.Eventually(t, 0, "a change of an instance of a kind no Bundle publishes to be refused", func() (bool, error) {
		err := env.Patch(ctx, suite.Gadget(group, ns, "w", ""), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":5}}`)), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "no Bundle publishes Gadget."+group), err
	})
	testenv.Consistently(t, 2*time.Second, "the children of an unpublished kind left alone", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(ctx, suite.Key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "4", err
	})
	if err := env.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRD of a kind no longer published: %v, want it kept", err)
	}

	// Publish again and restart: the new controller serves the kind.
	env.UpdateBundle(t, name, func(s *v1alpha1.BundleSpec) { s.API = api })
	env.BundleReady(t, name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	testenv.Eventually(t, 0, "the instance's change admitted again", func() (bool, error) {
		err := env.Patch(ctx, suite.Gadget(group, ns, "w", ""), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"size":5}}`)))
		return err == nil, err
	})
	testenv.Eventually(t, 0, "the instance applied again", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(ctx, suite.Key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "5", err
	})
	env.Restart(t, func() { env.MergePatch(t, suite.Gadget(group, ns, "w", ""), `{"spec":{"size":6}}`, "") })
	testenv.Eventually(t, 0, "the restarted controller to apply the instance", func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(ctx, suite.Key(ns, "w-conf"), cm)
		return err == nil && cm.Data["size"] == "6", err
	})

	// Delete the Bundle: its deletion policy deletes the CRD, the instance
	// and its ConfigMap.
	if err := env.Delete(ctx, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	env.Gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w-conf"}})
	env.Gone(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group}})
	env.Gone(t, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// TestPublishedKindSharded: the instances of a published kind follow the
// shard label as Compositions do: the unsharded controller leaves an
// instance labelled for shard a alone, and shard a's controller serves it.
func TestPublishedKindSharded(t *testing.T) {
	ctx := context.Background()
	ns, group, _, _ := env.ServeGadgets(t, "shard")

	// Until a controller of shard a has run once, stencil's admission
	// policy cannot tell what an instance of shard a naming no
	// ServiceAccount would be written as, and refuses it.
	inst := suite.Gadget(group, ns, "g", `{"size":1}`)
	inst.SetLabels(map[string]string{shard.Label: "never-" + ns})
	if err := env.Create(ctx, inst, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no stencil controller serves shard never-"+ns) {
		t.Errorf("an instance of a shard no controller ever served: %v, want it refused", err)
	}
	a := env.StartShard(t, "a")
	a.Stop()

	inst = suite.Gadget(group, ns, "g", `{"size":1}`)
	inst.SetLabels(map[string]string{shard.Label: "a"})
	env.MustCreate(t, inst)
	testenv.Consistently(t, 2*time.Second, "the unsharded controller to leave shard a's instance alone", func() (bool, error) {
		u := suite.Gadget(group, ns, "g", "")
		if err := env.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		_, hasStatus := u.Object["status"]
		err := env.Get(ctx, suite.Key(ns, "g-conf"), &corev1.ConfigMap{})
		return !hasStatus && apierrors.IsNotFound(err), nil
	})
	env.StartShard(t, "a")
	env.InstanceReady(t, group, ns, "g", metav1.ConditionTrue)
	if err := env.Get(ctx, suite.Key(ns, "g-conf"), &corev1.ConfigMap{}); err != nil {
		t.Errorf("shard a's instance has no ConfigMap: %v", err)
	}
}
