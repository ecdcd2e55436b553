package authority_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// The edges of the admission proof (issue 37 item 4): a deletion, a
// controller's start-up, the ApplySet keys the policy skips, and writes of
// a parent's status.

// startShardAs starts a controller of shard whose default ServiceAccount
// is account ("": none, a parent naming none stalls NoServiceAccount)
// and returns it with a stop that waits for it to end (run at cleanup
// too), so that a test can start the shard again with another default.
func startShardAs(t *testing.T, shardName, account string) (*testenv.Controller, func()) {
	t.Helper()
	return env.StartWith(t, testenv.ControllerOptions{Shard: shardName,
		Configure: func(o *engine.Options) { o.DefaultServiceAccount = account }})
}

// admissionOf reads the status.admission of Composition ns/name.
func admissionOf(t *testing.T, ns, name string) *v1alpha1.AdmissionStatus {
	t.Helper()
	return env.GetComposition(t, ns, name).Status.Admission
}

// readyOrNotAdmitted waits until Composition ns/name is, at its
// generation, either Ready or Stalled with reason NotAdmitted, and
// returns it: a test of what must not be admitted fails at once, not
// after a timeout, when it is.
func readyOrNotAdmitted(t *testing.T, ns, name string) *v1alpha1.Composition {
	t.Helper()
	var comp *v1alpha1.Composition
	testenv.Eventually(t, 0, "Composition "+name+" Ready or Stalled NotAdmitted", func() (bool, error) {
		comp = &v1alpha1.Composition{}
		if err := env.Get(context.Background(), suite.Key(ns, name), comp); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionReady)
		stalled := meta.FindStatusCondition(comp.Status.Conditions, v1alpha1.ConditionStalled)
		current := comp.Status.ObservedGeneration == comp.Generation
		return current && (ready != nil && ready.Status == metav1.ConditionTrue ||
				stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.Reason == v1alpha1.ReasonNotAdmitted),
			fmt.Errorf("conditions %+v", comp.Status.Conditions)
	})
	return comp
}

// TestDeletionAdmitsNothing (finding a): a DELETE of a parent that waits
// for re-admission bumps its metadata.generation (the API server does so
// when it sets deletionTimestamp on an object with finalizers), but no
// one checked that DELETE against the account: the parent is let go, its
// members left in place and still labelled, never deleted as the
// account nobody vouched for.
func TestDeletionAdmitsNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	shardName := "deleting-" + rand.String(5)
	b := env.Bundle(t, "deleting-"+ns, suite.TwoConfigMaps())
	powerfulAccount(t, ns, "first")
	powerfulAccount(t, ns, "second")
	_, stop := startShardAs(t, shardName, "first")
	comp := suite.Composition(ns, "app", b.Name, `{}`)
	comp.Labels = map[string]string{shard.Label: shardName}
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})

	// The shard's default ServiceAccount changes: nobody checked that the
	// parent's requester may use "second".
	stop()
	startShardAs(t, shardName, "second")
	env.Stalled(t, ns, "app", v1alpha1.ReasonNotAdmitted)
	rec := admissionOf(t, ns, "app")
	if rec == nil || rec.Admitted || rec.Generation == 0 {
		t.Fatalf("admission record %+v, want one waiting for a change", rec)
	}

	if err := env.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	env.Gone(t, comp)
	// Its finalizer is dropped only after finalize or letting go: what
	// finalize deletes is gone by now.
	for _, name := range []string{"keep", "second"} {
		cm := &corev1.ConfigMap{}
		if err := env.Get(ctx, suite.Key(ns, name), cm); err != nil {
			t.Errorf("member ConfigMap %s after the deletion of a parent not admitted: %v, want it left in place", name, err)
			continue
		}
		if cm.Labels[applyset.LabelPartOf] == "" {
			t.Errorf("member ConfigMap %s lost its part-of label: %v", name, cm.Labels)
		}
	}
	testenv.Eventually(t, 0, "a Warning event saying the members are left in place", func() (bool, error) {
		for _, e := range env.Events(t, ns, v1alpha1.ReasonNotAdmitted) {
			if e.Regarding.Name == "app" && strings.Contains(e.Note, "left in place") {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestAStartUpStallIsNoEarlierStencil (finding b): a parent whose first
// status this controller wrote before it could judge its admission (here
// a stall NoServiceAccount: its shard's controller had no default
// ServiceAccount; the same status comes of a start-up whose admission
// cache is not started yet) looks like one an earlier stencil
// reconciled (conditions, no admission record). When the shard's default
// becomes an account its creator may not use, it is not admitted as an
// earlier stencil's: it waits for a change by someone who may.
func TestAStartUpStallIsNoEarlierStencil(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	shardName := "startup-" + rand.String(5)
	b := env.Bundle(t, "startup-"+ns, suite.TwoConfigMaps())
	powerfulAccount(t, ns, "powerful")
	env.Grant(t, ns, "mallory", "mallory", suite.CompositionsRule)
	mallory := env.AsUser(t, "mallory")
	_, stop := startShardAs(t, shardName, "")
	comp := suite.Composition(ns, "app", b.Name, `{}`)
	comp.Labels = map[string]string{shard.Label: shardName}
	// Nothing to check: the shard writes as no account.
	if err := mallory.Create(ctx, comp); err != nil {
		t.Fatal(err)
	}
	env.Stalled(t, ns, "app", v1alpha1.ReasonNoServiceAccount)

	stop()
	startShardAs(t, shardName, "powerful")
	got := readyOrNotAdmitted(t, ns, "app")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled); c == nil || c.Reason != v1alpha1.ReasonNotAdmitted {
		t.Fatalf("mallory's Composition after the default became powerful: conditions %+v, admission %+v; want Stalled NotAdmitted",
			got.Status.Conditions, got.Status.Admission)
	}
	if err := env.Get(ctx, suite.Key(ns, "keep"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap keep written as powerful for mallory's Composition: %v", err)
	}
	// The cluster admin may use powerful: their change admits it.
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["stencil.dev/readmitted"] = "by the admin"
	})
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})
}

// installAndExtra renders ConfigMap conf, which shows .Release.IsInstall,
// and Secret extra while .Values.extra.
func installAndExtra() map[string]string {
	return map[string]string{
		"values.yaml":         "extra: true\n",
		"templates/conf.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: conf\ndata:\n  install: {{ .Release.IsInstall | quote }}\n",
		"templates/extra.yaml": "{{- if .Values.extra }}\napiVersion: v1\nkind: Secret\nmetadata:\n  name: extra\n" +
			"stringData:\n  x: \"1\"\n{{- end }}\n",
	}
}

// deployerAccount makes ServiceAccount deployer in ns, which may write
// ConfigMaps and Secrets there, and returns once the API server's
// authorizer applies both grants.
func deployerAccount(t *testing.T, ns string) {
	t.Helper()
	powerfulAccount(t, ns, "deployer")
	rbacSecrets := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	env.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer-secrets"}, Rules: []rbacv1.PolicyRule{rbacSecrets}})
	env.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer-secrets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer-secrets"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}})
	testenv.WaitGranted(t, env.Client, testenv.ServiceAccountSubject(ns, "deployer"), ns, 0, rbacSecrets)
}

// upgraded brings comp (of installAndExtra, installed) a render after the
// first, an upgrade, by controller c, and returns the resourceVersion of
// ConfigMap conf once it shows it (install "false") and c settled.
func upgraded(t *testing.T, c *testenv.Controller, comp *v1alpha1.Composition) string {
	t.Helper()
	ctx := context.Background()
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Annotations = map[string]string{"touch": "1"} })
	conf := &corev1.ConfigMap{}
	testenv.Eventually(t, 0, "ConfigMap conf rendered as an upgrade", func() (bool, error) {
		err := env.Get(ctx, suite.Key(comp.Namespace, "conf"), conf)
		return err == nil && conf.Data["install"] == "false", err
	})
	c.Settle(t, comp.Namespace)
	if err := env.Get(ctx, suite.Key(comp.Namespace, "conf"), conf); err != nil {
		t.Fatal(err)
	}
	return conf.ResourceVersion
}

// TestApplySetKeysChangeNothing (finding c): the ApplySet's keys that
// stencil's admission policy lets anyone who may update a parent change
// (its id label and its tooling, contains-group-kinds and
// additional-namespaces annotations) change nothing a pass renders,
// prunes or finalizes: alice, who may update the Composition but not use
// its ServiceAccount, empties contains-group-kinds, and .Release.IsInstall
// stays false, a member the render drops is still pruned, and the
// deletion still deletes every member. The annotations are written again
// from the controller's record.
func TestApplySetKeysChangeNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, env.Client)
	shardName := "applyset-" + rand.String(5)
	b := env.Bundle(t, "applyset-"+ns, installAndExtra())
	deployerAccount(t, ns)
	env.Grant(t, ns, "alice", "alice", suite.CompositionsRule)
	alice := env.AsUser(t, "alice")
	c, stop := startShardAs(t, shardName, testenv.DefaultServiceAccount)

	comp := suite.Composition(ns, "app", b.Name, `{}`)
	comp.Labels = map[string]string{shard.Label: shardName}
	comp.Spec.ServiceAccountName = "deployer"
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	env.Exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"}})
	version := upgraded(t, c, comp)
	conf := &corev1.ConfigMap{}

	// alice empties contains-group-kinds: each call a new value, all of
	// which name no group-kind.
	n := 0
	emptied := func(cl client.Client) func() error {
		return func() error {
			n++
			return env.Retry(ctx, comp, func() error {
				comp.Annotations[applyset.AnnotationGroupKinds] = strings.Repeat(",", n)
				return cl.Update(ctx, comp)
			})
		}
	}
	// A change of those keys alone brings no pass: the next one a change
	// of something else brings reads them (here the admin's touch, whose
	// version holds alice's change).
	if err := emptied(alice)(); err != nil {
		t.Fatal(err)
	}
	touches := 1
	c.PassAfter(t, ns, "app", func() error {
		touches++
		return env.Retry(ctx, comp, func() error {
			comp.Annotations["touch"] = fmt.Sprint(touches)
			return env.Update(ctx, comp)
		})
	})
	c.Settle(t, ns)
	if err := env.Get(ctx, suite.Key(ns, "conf"), conf); err != nil {
		t.Fatal(err)
	}
	if conf.ResourceVersion != version || conf.Data["install"] != "false" {
		t.Errorf("ConfigMap conf after alice emptied contains-group-kinds: install %q (resourceVersion %s, was %s); want it untouched",
			conf.Data["install"], conf.ResourceVersion, version)
	}
	testenv.Eventually(t, 0, "the ApplySet annotations written again from the record", func() (bool, error) {
		got := env.GetComposition(t, ns, "app").Annotations[applyset.AnnotationGroupKinds]
		return got == "ConfigMap,Secret", fmt.Errorf("contains-group-kinds %q", got)
	})

	// Prune: while the shard is down, the deployer's owner drops the
	// Secret from the render and alice empties the annotation.
	stop()
	env.UpdateComposition(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"extra":false}`) })
	if err := emptied(alice)(); err != nil {
		t.Fatal(err)
	}
	c, stop = startShardAs(t, shardName, testenv.DefaultServiceAccount)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	c.Settle(t, ns)
	if err := env.Get(ctx, suite.Key(ns, "extra"), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("Secret extra, which the render dropped, after alice emptied contains-group-kinds: %v; want it pruned", err)
	}

	// Finalize: while the shard is down, alice empties the annotation and
	// the Composition is deleted.
	stop()
	if err := emptied(alice)(); err != nil {
		t.Fatal(err)
	}
	if err := env.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	startShardAs(t, shardName, testenv.DefaultServiceAccount)
	env.Gone(t, comp)
	if err := env.Get(ctx, suite.Key(ns, "conf"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap conf after the deletion of a Composition whose contains-group-kinds alice emptied: %v; want it deleted", err)
	}
}

// TestOnlyTheControllerWritesStatus (finding d): the admission proof
// reads the parent's status (its record, and the evidence of an earlier
// stencil), so nobody but stencil's controller may write it, whatever
// RBAC grants: a user granted compositions/status, or a published kind's
// status, is refused by stencil's admission policy.
func TestOnlyTheControllerWritesStatus(t *testing.T) {
	ctx := context.Background()
	ns, group, _, _ := env.ServeGadgets(t, "status")
	b := env.Bundle(t, "status-comp-"+ns, suite.TwoConfigMaps())
	comp := suite.Composition(ns, "app", b.Name, `{}`)
	env.MustCreate(t, comp)
	env.Condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	testenv.WaitKindChecked(t, env.Client, suite.Gadget(group, ns, "probe", `{"size":1}`), 0)
	env.MustCreate(t, suite.Gadget(group, ns, "g", `{"size":1}`))
	env.InstanceReady(t, group, ns, "g", metav1.ConditionTrue)

	env.Grant(t, ns, "mallory", "mallory",
		rbacv1.PolicyRule{APIGroups: []string{"stencil.dev"}, Resources: []string{"compositions", "compositions/status"}, Verbs: []string{"get", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets", "gadgets/status"}, Verbs: []string{"get", "update", "patch"}})
	mallory := env.AsUser(t, "mallory")
	forged := []byte(`{"status":{"admission":{"policy":"forged","admitted":true},"bundleRevision":"forged"}}`)
	err := mallory.Status().Patch(ctx, &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}},
		client.RawPatch(types.MergePatchType, forged))
	suite.ForbiddenBy(t, err, `user "mallory" may not write the status of Composition `+ns+`/app`)
	err = mallory.Status().Patch(ctx, suite.Gadget(group, ns, "g", ""), client.RawPatch(types.MergePatchType, forged))
	suite.ForbiddenBy(t, err, `user "mallory" may not write the status of Gadget `+ns+`/g`)
	if rec := admissionOf(t, ns, "app"); rec != nil && rec.Policy == "forged" {
		t.Errorf("the forged record was written: %+v", rec)
	}
}
