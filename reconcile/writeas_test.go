package reconcile_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// secretBundle renders the Secret its values name: a tenant chooses the name.
func secretBundle() map[string]string {
	return map[string]string{
		"values.yaml":           "name: app-secret\n",
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Values.name }}\nstringData:\n  password: from-the-tenant\n",
	}
}

// secretUntouched checks that the admin's Secret still holds what the admin
// wrote, carries no part-of label and no field of stencil's.
func secretUntouched(t *testing.T, ns, name string, want map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{}
	if err := k.Get(context.Background(), key(ns, name), s); err != nil {
		t.Fatalf("the admin's Secret %s: %v", name, err)
	}
	if !maps.EqualFunc(s.Data, want, slices.Equal) {
		t.Errorf("the admin's Secret %s was overwritten", name)
	}
	if id := s.Labels[applyset.LabelPartOf]; id != "" {
		t.Errorf("the admin's Secret %s was labelled a member of %s", name, id)
	}
	for _, mf := range s.ManagedFields {
		if mf.Manager == applyset.FieldManager {
			t.Errorf("the admin's Secret %s has fields of %s: %+v", name, applyset.FieldManager, mf)
		}
	}
}

// TestWritesAreTheTenants: with the default install (a default
// ServiceAccount, no --write-as-controller), a Composition naming no
// ServiceAccount whose values name an admin's Secret of its namespace
// writes as ServiceAccount stencil of the namespace, never as the
// controller: the account has no RBAC, so the Composition stalls
// (Forbidden, saying how to set the account up) and the Secret is
// untouched. Given the account and a Role, the same Composition applies,
// as the account. With WriteAsController chosen explicitly, the
// controller writes as itself, as before.
func TestWritesAreTheTenants(t *testing.T) {
	const tenancy = "tenancy"
	env.StartWith(t, testenv.ControllerOptions{Shard: tenancy})
	ns := testenv.Namespace(t, k)
	admin := map[string][]byte{"password": []byte("the-admins")}
	mustCreate(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-admin"}, Data: admin})
	b := bundle(t, "tenant-secret-"+ns, secretBundle())
	comp := composition(ns, "app", b.Name, `{"name":"db-admin"}`)
	comp.Labels = map[string]string{shard.Label: tenancy}
	mustCreate(t, comp)

	stalled(t, ns, "app", v1alpha1.ReasonForbidden,
		"ServiceAccount "+ns+"/stencil may not create secrets",
		"create ServiceAccount stencil in namespace "+ns, "RoleBinding")
	consistently(t, "the admin's Secret to stay untouched", 2*time.Second, func() (bool, error) {
		secretUntouched(t, ns, "db-admin", admin)
		return !t.Failed(), nil
	})

	t.Run("as the account, given its RBAC", func(t *testing.T) {
		rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
		mustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil"}})
		mustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-tenant"}, Rules: rules})
		mustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-tenant"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "stencil-tenant"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "stencil"}}})
		// A pass before the authorizer applies the grant would stall
		// Forbidden again, and look again only a minute later.
		testenv.WaitGranted(t, k, testenv.ServiceAccountSubject(ns, "stencil"), ns, 0, rules...)
		update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"name":"app-secret"}`) })
		condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-secret"}})
		secretUntouched(t, ns, "db-admin", admin)
	})

	t.Run("as the controller, when chosen", func(t *testing.T) {
		other := testenv.Namespace(t, k) // no ServiceAccount in it at all
		asController := composition(other, "app", b.Name, `{"name":"app-secret"}`)
		mustCreate(t, asController) // reconciled by the package's controller: WriteAsController
		condition(t, other, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
		exists(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "app-secret"}})
	})
}

// TestNoIdentityStalls: the zero engine.Options (no default
// ServiceAccount, WriteAsController false) never write as the controller:
// a Composition naming no ServiceAccount stalls with reason
// NoServiceAccount and nothing is applied.
func TestNoIdentityStalls(t *testing.T) {
	const nobody = "nobody"
	env.StartWith(t, testenv.ControllerOptions{Shard: nobody, Configure: func(o *engine.Options) {
		o.DefaultServiceAccount, o.WriteAsController = "", false
	}})
	ns := testenv.Namespace(t, k)
	b := bundle(t, "nobody-"+ns, suite.TwoConfigMaps())
	comp := composition(ns, "app", b.Name, `{}`)
	comp.Labels = map[string]string{shard.Label: nobody}
	mustCreate(t, comp)
	stalled(t, ns, "app", v1alpha1.ReasonNoServiceAccount, "no ServiceAccount to write as", "--write-as-controller")
	if err := k.Get(context.Background(), key(ns, "keep"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap keep exists (err %v): nothing may be applied without an identity", err)
	}
}

// TestNamespaceSelector: a Bundle whose spec.namespaceSelector does not
// select a Composition's namespace stalls it (reason NotAllowed, naming
// the Bundle and the namespace) and applies nothing; labelling the
// namespace so the selector selects it brings a pass that applies.
func TestNamespaceSelector(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "gold-only-"+ns, suite.TwoConfigMaps(), func(s *v1alpha1.BundleSpec) {
		s.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold-" + ns}}
	})
	mustCreate(t, composition(ns, "app", b.Name, `{}`))
	stalled(t, ns, "app", v1alpha1.ReasonNotAllowed, "Bundle "+b.Name, "namespace "+ns)
	if err := k.Get(ctx, key(ns, "keep"), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap keep exists (err %v): nothing may be applied in a namespace the Bundle does not select", err)
	}

	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := updateFresh(ctx, n, func() error {
		n.Labels["tier"] = "gold-" + ns
		return k.Update(ctx, n)
	}); err != nil {
		t.Fatal(err)
	}
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	exists(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keep"}})

	t.Run("a namespace no longer selected stalls, pruning nothing", func(t *testing.T) {
		if err := updateFresh(ctx, n, func() error {
			delete(n.Labels, "tier")
			return k.Update(ctx, n)
		}); err != nil {
			t.Fatal(err)
		}
		stalled(t, ns, "app", v1alpha1.ReasonNotAllowed, "Bundle "+b.Name)
		update(t, composition(ns, "app", "", ""), func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"second":false}`) })
		// The pass of the new values stalls too (stalled waits for the
		// Composition's generation), and prunes nothing then or after.
		stalled(t, ns, "app", v1alpha1.ReasonNotAllowed, "Bundle "+b.Name)
		consistently(t, "ConfigMap second to stay", 2*time.Second, func() (bool, error) {
			err := k.Get(ctx, key(ns, "second"), &corev1.ConfigMap{})
			return err == nil, err
		})
	})
}
