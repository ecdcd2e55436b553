package reconcile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// aggregateLabel marks the ClusterRoles aggregated into stencil-apply.
const aggregateLabel = "rbac.stencil.dev/aggregate-to-manager"

// testKinds is what the tests' bundles render beyond the kinds of the
// examples (config/rbac/aggregate.yaml), granted the way an admin would:
// a ClusterRole aggregated into stencil-apply. ResourceQuotas are left out
// on purpose: see TestForbiddenKind.
var testKinds = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "stencil-test-kinds", Labels: map[string]string{aggregateLabel: "true"}},
	Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"*"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	},
}

// controllerConfig installs the controller's own RBAC from config/rbac
// (role.yaml, aggregate.yaml, role_binding.yaml) and its ServiceAccount
// stencil-system/stencil, and returns a config that authenticates as that
// ServiceAccount with a token: the tests' controller runs with exactly the
// permissions a real installation grants, not as a cluster admin. envtest
// runs no kube-controller-manager, so the test does the ClusterRole
// aggregation itself.
func controllerConfig(ctx context.Context, admin client.Client, adminConfig *rest.Config) (*rest.Config, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "stencil-system", Name: "stencil"}}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sa.Namespace}}, sa, testKinds.DeepCopy()} {
		if err := admin.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	for _, file := range []string{"role.yaml", "aggregate.yaml", "role_binding.yaml", "webhook_cert.yaml", "bundle_source.yaml"} {
		if err := createAll(ctx, admin, filepath.Join(testenv.Root(), "config", "rbac", file)); err != nil {
			return nil, err
		}
	}
	if err := aggregate(ctx, admin, "stencil-apply"); err != nil {
		return nil, err
	}
	expiry := int64(4 * 3600)
	token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := admin.SubResource("token").Create(ctx, sa, token); err != nil {
		return nil, fmt.Errorf("token for %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return &rest.Config{
		Host:            adminConfig.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: adminConfig.CAData},
		BearerToken:     token.Status.Token,
	}, nil
}

// createAll creates every object of a multi-document YAML file.
func createAll(ctx context.Context, c client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("%s: create %s %s: %w", path, u.GetKind(), u.GetName(), err)
		}
	}
}

// aggregate does the clusterrole-aggregation controller's job for one
// ClusterRole: its rules become those of the ClusterRoles its
// aggregationRule selects.
func aggregate(ctx context.Context, c client.Client, name string) error {
	var roles rbacv1.ClusterRoleList
	if err := c.List(ctx, &roles, client.MatchingLabels{aggregateLabel: "true"}); err != nil {
		return err
	}
	target := &rbacv1.ClusterRole{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, target); err != nil {
		return err
	}
	target.Rules = nil
	for _, r := range roles.Items {
		target.Rules = append(target.Rules, r.Rules...)
	}
	return c.Update(ctx, target)
}
