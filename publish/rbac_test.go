package publish_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// TestClusterRoles: what `stencil bundle rbac` prints for a kind.
func TestClusterRoles(t *testing.T) {
	roles := publish.ClusterRoles("appservice", v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService"})
	type role struct {
		Name   string
		Labels map[string]string
		Rules  []rbacv1.PolicyRule
	}
	var got []role
	for _, r := range roles {
		if r.Kind != "ClusterRole" || r.APIVersion != "rbac.authorization.k8s.io/v1" {
			t.Errorf("%s: apiVersion %s kind %s", r.Name, r.APIVersion, r.Kind)
		}
		got = append(got, role{r.Name, r.Labels, r.Rules})
	}
	rule := func(resources []string, verbs ...string) []rbacv1.PolicyRule {
		return []rbacv1.PolicyRule{{APIGroups: []string{"app.example.com"}, Resources: resources, Verbs: verbs}}
	}
	want := []role{
		{"stencil:published:appservices.app.example.com",
			map[string]string{"rbac.stencil.dev/aggregate-to-manager": "true", "stencil.dev/bundle": "appservice"},
			append(rule([]string{"appservices", "appservices/status", "appservices/finalizers"}, "get", "list", "watch", "update", "patch"),
				// The kind's binding of stencil's admission policy, by name
				// only: no other binding's (issue 37).
				rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicybindings"},
					ResourceNames: []string{"stencil-access.appservices.app.example.com"}, Verbs: []string{"update", "patch", "delete"}})},
		{"stencil:published:appservices.app.example.com-edit",
			map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true", "rbac.authorization.k8s.io/aggregate-to-edit": "true", "stencil.dev/bundle": "appservice"},
			rule([]string{"appservices"}, "create", "update", "patch", "delete", "deletecollection", "get", "list", "watch")},
		{"stencil:published:appservices.app.example.com-view",
			map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true", "stencil.dev/bundle": "appservice"},
			rule([]string{"appservices"}, "get", "list", "watch")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ClusterRoles (-want +got):\n%s", diff)
	}
}
