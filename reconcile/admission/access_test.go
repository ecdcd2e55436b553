package admission_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// TestAdmissionServiceAccountUse: a user who may only write Compositions
// may not name a ServiceAccount (nor default to the controller's default
// one) for a Composition to write as: the webhook asks, with a
// SubjectAccessReview of the request's user, whether it may impersonate
// the account or create pods in the namespace, and refuses naming the
// account and the missing permission; a user who may impersonate it, or
// create pods, is allowed. An update that changes the render of a
// Composition running as an account is checked too. A Bundle's
// spec.namespaceSelector refuses a namespace it does not select.
func TestAdmissionServiceAccountUse(t *testing.T) {
	const name = "stencil-validating-access"
	hooks := env.InstallAdmission(t, name, map[string]string{suite.AdmissionLabel: "true"})
	// The default install: impersonation, default ServiceAccount "stencil".
	env.StartWith(t, testenv.ControllerOptions{Shard: "admission-access", Webhooks: hooks, Admission: admission.Options{ConfigName: name, MutatingConfigName: name + "-mutating"}})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	b := env.Bundle(t, "access-"+ns, suite.TwoConfigMaps())
	env.Grant(t, ns, "alice", "alice", suite.CompositionsRule)
	env.Grant(t, ns, "bob", "bob", suite.CompositionsRule, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"deployer"}})
	env.Grant(t, ns, "carol", "carol", suite.CompositionsRule, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}})
	alice, bob, carol := env.AsUser(t, "alice"), env.AsUser(t, "bob"), env.AsUser(t, "carol")
	// Of the shard of the controller started above, whose default
	// ServiceAccount is "stencil".
	named := func(sa string) *v1alpha1.Composition {
		c := suite.Composition(ns, "app", b.Name, `{}`)
		c.Labels = map[string]string{shard.Label: "admission-access"}
		c.Spec.ServiceAccountName = sa
		return c
	}
	suite.ForbiddenBy(t, alice.Create(ctx, named("deployer")),
		`user "alice" may not use ServiceAccount `+ns+`/deployer: needs impersonate on serviceaccounts "deployer" or create on pods in `+ns)
	suite.ForbiddenBy(t, alice.Create(ctx, named("")), `user "alice" may not use ServiceAccount `+ns+`/stencil`)
	suite.ForbiddenBy(t, bob.Create(ctx, named("admin")), `user "bob" may not use ServiceAccount `+ns+`/admin`)
	if err := bob.Create(ctx, named("deployer"), client.DryRunAll); err != nil {
		t.Errorf("bob, who may impersonate deployer, was refused: %v", err)
	}
	if err := carol.Create(ctx, named("deployer"), client.DryRunAll); err != nil {
		t.Errorf("carol, who may create pods in %s, was refused: %v", ns, err)
	}

	t.Run("an update of what a Composition running as the account renders", func(t *testing.T) {
		comp := named("deployer")
		comp.Spec.Suspend = true // nothing to reconcile: this is about admission
		if err := bob.Create(ctx, comp); err != nil {
			t.Fatalf("bob's Composition: %v", err)
		}
		// The controller writes the Composition too (its finalizer):
		// read it again, as c, on a conflict.
		as := func(c client.Client, change func(*v1alpha1.Composition)) error {
			return testenv.Retry(ctx, c, comp, func() error { change(comp); return c.Update(ctx, comp) })
		}
		suite.ForbiddenBy(t, as(alice, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"changed"}`) }),
			`user "alice" may not use ServiceAccount `+ns+`/deployer`)
		suite.ForbiddenBy(t, as(alice, func(c *v1alpha1.Composition) { c.Labels = map[string]string{"team": "a"} }),
			`ServiceAccount `+ns+`/deployer`)
		if err := as(bob, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"changed"}`) }); err != nil {
			t.Errorf("bob, who may impersonate deployer, could not change the values: %v", err)
		}
	})

	t.Run("a namespace the Bundle does not select", func(t *testing.T) {
		gold := env.Bundle(t, "access-gold-"+ns, suite.TwoConfigMaps(), func(s *v1alpha1.BundleSpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		})
		testenv.Eventually(t, 0, "the webhook to refuse a namespace the Bundle does not select", func() (bool, error) {
			err := env.Create(ctx, suite.Composition(ns, "gold", gold.Name, `{}`), client.DryRunAll)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "Bundle "+gold.Name+" may not be used in namespace "+ns), err
		})
	})
}

// TestAdmissionServiceAccountOfInstance: a user who may create only the
// instances of a published kind may not name, by the annotation
// stencil.dev/service-account-name, a ServiceAccount it may not use
// itself; one who may impersonate it may. The published kind's access
// entry fails closed.
func TestAdmissionServiceAccountOfInstance(t *testing.T) {
	env.StartAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{suite.AdmissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := env.AdmissionNamespace(t)
	group := "acc-" + ns + ".example.com"
	env.GrantKind(t, group, "gadgets")
	b := env.Bundle(t, "acc-gadgets-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
	env.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	publishedRule(t, group, true)
	gadgets := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets"}, Verbs: []string{"get", "create", "update", "patch"}}
	env.Grant(t, ns, "dave", "dave", gadgets)
	env.Grant(t, ns, "erin", "erin", gadgets, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"cluster-ops"}})
	privileged := func() client.Object {
		g := suite.Gadget(group, ns, "g", `{"size":1}`)
		g.SetAnnotations(map[string]string{"stencil.dev/service-account-name": "cluster-ops"})
		return g
	}
	// Until the kind's binding and parameters reach the API server, the
	// policy refuses every instance ("no Bundle publishes"), or checks
	// none: wait for the refusal of the account's use itself.
	testenv.Eventually(t, 0, "the admission policy to refuse dave the account", func() (bool, error) {
		err := env.AsUser(t, "dave").Create(ctx, privileged(), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), `user "dave" may not use ServiceAccount`), err
	})
	suite.ForbiddenBy(t, env.AsUser(t, "dave").Create(ctx, privileged()),
		`user "dave" may not use ServiceAccount `+ns+`/cluster-ops: needs impersonate on serviceaccounts "cluster-ops" or create on pods in `+ns)
	if err := env.AsUser(t, "erin").Create(ctx, privileged(), client.DryRunAll); err != nil {
		t.Errorf("erin, who may impersonate cluster-ops, was refused: %v", err)
	}
}
