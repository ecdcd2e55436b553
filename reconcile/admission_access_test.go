package reconcile_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// asUser returns a client of user, in group system:authenticated and
// groups, impersonated by the cluster admin: the webhook sees the request's
// user as the API server authenticated it.
func asUser(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: k.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// grant gives user the rules in namespace ns, with a Role and a RoleBinding
// named name, and waits until the API server's authorizer applies them:
// until then RBAC refuses the user itself, and stencil's admission policy
// finds it may use no ServiceAccount.
func grant(t *testing.T, ns, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})
	mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}})
	testenv.WaitGranted(t, k, testenv.Subject{User: user, Groups: []string{"system:authenticated"}}, ns, 0, rules...)
}

// compositionsRule lets a user write Compositions.
var compositionsRule = rbacv1.PolicyRule{APIGroups: []string{"stencil.dev"}, Resources: []string{"compositions"},
	Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}

// forbiddenBy checks that err is the refusal of stencil's admission policy
// (reason Forbidden) and that its message names every one of want.
func forbiddenBy(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("the request was admitted; want it refused")
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `ValidatingAdmissionPolicy '`+authority.PolicyName+`'`) {
		t.Fatalf("got %v; want the admission policy's refusal, reason Forbidden", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q: want it to name %q", err.Error(), w)
		}
	}
}

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
	hooks, err := testenv.InstallWebhooks(env.Config, name, &metav1.LabelSelector{MatchLabels: map[string]string{admissionLabel: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k.Delete(context.Background(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = k.Delete(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name + "-mutating"}})
		_ = hooks.Cleanup()
	})
	// The default install: impersonation, default ServiceAccount "stencil".
	startWith(t, testenv.ControllerOptions{Shard: "admission-access", Webhooks: hooks, Admission: admission.Options{ConfigName: name, MutatingConfigName: name + "-mutating"}})
	ctx := context.Background()
	ns := admissionNamespace(t)
	b := bundle(t, "access-"+ns, twoConfigMaps())
	grant(t, ns, "alice", "alice", compositionsRule)
	grant(t, ns, "bob", "bob", compositionsRule, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"deployer"}})
	grant(t, ns, "carol", "carol", compositionsRule, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}})
	alice, bob, carol := asUser(t, "alice"), asUser(t, "bob"), asUser(t, "carol")
	// Of the shard of the controller started above, whose default
	// ServiceAccount is "stencil".
	named := func(sa string) *v1alpha1.Composition {
		c := composition(ns, "app", b.Name, `{}`)
		c.Labels = map[string]string{shard.Label: "admission-access"}
		c.Spec.ServiceAccountName = sa
		return c
	}
	forbiddenBy(t, alice.Create(ctx, named("deployer")),
		`user "alice" may not use ServiceAccount `+ns+`/deployer: needs impersonate on serviceaccounts "deployer" or create on pods in `+ns)
	forbiddenBy(t, alice.Create(ctx, named("")), `user "alice" may not use ServiceAccount `+ns+`/stencil`)
	forbiddenBy(t, bob.Create(ctx, named("admin")), `user "bob" may not use ServiceAccount `+ns+`/admin`)
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
		forbiddenBy(t, as(alice, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"changed"}`) }),
			`user "alice" may not use ServiceAccount `+ns+`/deployer`)
		forbiddenBy(t, as(alice, func(c *v1alpha1.Composition) { c.Labels = map[string]string{"team": "a"} }),
			`ServiceAccount `+ns+`/deployer`)
		if err := as(bob, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"changed"}`) }); err != nil {
			t.Errorf("bob, who may impersonate deployer, could not change the values: %v", err)
		}
	})

	t.Run("a namespace the Bundle does not select", func(t *testing.T) {
		gold := bundle(t, "access-gold-"+ns, twoConfigMaps(), func(s *v1alpha1.BundleSpec) {
			s.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		})
		eventually(t, "the webhook to refuse a namespace the Bundle does not select", func() (bool, error) {
			err := k.Create(ctx, composition(ns, "gold", gold.Name, `{}`), client.DryRunAll)
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
	startAdmission(t, admission.DefaultWebhookConfigName, "admission", map[string]string{admissionLabel: "true"}, admission.Options{})
	ctx := context.Background()
	ns := admissionNamespace(t)
	group := "acc-" + ns + ".example.com"
	grantKind(t, group, "gadgets")
	b := bundle(t, "acc-gadgets-"+ns, gadgetFiles(""), publishing(group))
	bundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	publishedRule(t, group, true)
	gadgets := rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{"gadgets"}, Verbs: []string{"get", "create", "update", "patch"}}
	grant(t, ns, "dave", "dave", gadgets)
	grant(t, ns, "erin", "erin", gadgets, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"serviceaccounts"},
		Verbs: []string{"impersonate"}, ResourceNames: []string{"cluster-ops"}})
	privileged := func() client.Object {
		g := gadget(group, ns, "g", `{"size":1}`)
		g.SetAnnotations(map[string]string{"stencil.dev/service-account-name": "cluster-ops"})
		return g
	}
	// Until the kind's binding and parameters reach the API server, the
	// policy refuses every instance ("no Bundle publishes"), or checks
	// none: wait for the refusal of the account's use itself.
	eventually(t, "the admission policy to refuse dave the account", func() (bool, error) {
		err := asUser(t, "dave").Create(ctx, privileged(), client.DryRunAll)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), `user "dave" may not use ServiceAccount`), err
	})
	forbiddenBy(t, asUser(t, "dave").Create(ctx, privileged()),
		`user "dave" may not use ServiceAccount `+ns+`/cluster-ops: needs impersonate on serviceaccounts "cluster-ops" or create on pods in `+ns)
	if err := asUser(t, "erin").Create(ctx, privileged(), client.DryRunAll); err != nil {
		t.Errorf("erin, who may impersonate cluster-ops, was refused: %v", err)
	}
}
