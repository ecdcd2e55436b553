package suite

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/reconcile/authority"
)

// The Suite's identities: users a test acts as, the grants it gives
// them, the controller and a tenant's ServiceAccount.

// AsUser returns a client of user, in group system:authenticated and
// groups, impersonated by the cluster admin: the webhook sees the
// request's user as the API server authenticated it.
func (s *Suite) AsUser(t testing.TB, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(s.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Grant gives user the rules in namespace ns, with a Role and a
// RoleBinding named name, and waits until the API server's authorizer
// applies them (WaitGranted): until then RBAC refuses the user itself,
// and stencil's admission policy finds it may use no ServiceAccount.
func (s *Suite) Grant(t testing.TB, ns, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	s.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules})
	s.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}})
	testenv.WaitGranted(t, s.Client, testenv.Subject{User: user, Groups: []string{"system:authenticated"}}, ns, 0, rules...)
}

// CompositionsRule lets a user write Compositions.
var CompositionsRule = rbacv1.PolicyRule{APIGroups: []string{"stencil.dev"}, Resources: []string{"compositions"},
	Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}

// ForbiddenBy checks that err is the refusal of stencil's admission
// policy (reason Forbidden) and that its message names every one of
// want.
func ForbiddenBy(t testing.TB, err error, want ...string) {
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

// GrantController grants the controller rules, as a cluster admin does:
// a ClusterRole name aggregated to the controller's stencil-apply
// (aggregated here by hand: envtest runs no aggregation controller),
// waited on until the API server's authorizer applies it, and removed
// when the test ends.
func (s *Suite) GrantController(t testing.TB, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{aggregateLabel: "true"}},
		Rules:      rules,
	}
	s.MustCreate(t, role)
	if err := aggregate(context.Background(), s.Client, "stencil-apply"); err != nil {
		t.Fatalf("aggregate: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Delete(context.Background(), role)
		_ = aggregate(context.Background(), s.Client, "stencil-apply")
	})
}

// TenantAccount creates ServiceAccount stencil of ns (a tenant's, the
// default account a parent writes as) with a Role that may write
// ConfigMaps and Secrets and read ServiceAccounts there.
func (s *Suite) TenantAccount(t testing.TB, ns string) {
	t.Helper()
	s.MustCreate(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil"}})
	s.MustCreate(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-tenant"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "list", "watch"}},
		}})
	s.MustCreate(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stencil-tenant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "stencil-tenant"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "stencil"}}})
}

// Warnings keeps the warnings the API server returns to a client (a
// rest.WarningHandler).
type Warnings struct {
	mu   sync.Mutex
	list []string
}

var _ rest.WarningHandler = (*Warnings)(nil)

// HandleWarningHeader keeps text.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// Take returns the warnings kept so far and forgets them.
func (w *Warnings) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// WarningClient returns a cluster admin's client whose warnings w keeps.
func (s *Suite) WarningClient(t testing.TB) (client.Client, *Warnings) {
	t.Helper()
	w := &Warnings{}
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}
