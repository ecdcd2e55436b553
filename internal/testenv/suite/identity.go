package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/stencil-dev/stencil/internal/testenv"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// aggregateLabel marks the ClusterRoles aggregated into stencil-apply.
const aggregateLabel = "rbac.stencil.dev/aggregate-to-manager"

// testKinds is what the tests' bundles render beyond the kinds of the
// examples (config/rbac/aggregate.yaml), granted the way an admin would:
// a ClusterRole aggregated into stencil-apply. ResourceQuotas are left out
// on purpose: see TestForbiddenKind (reconcile). It also grants the webhook
// configurations the tests name (each its own, as an admin who sets
// --webhook-config grants that name): config/rbac writes only
// stencil-validating and stencil-mutating.
var testKinds = &rbacv1.ClusterRole{
	ObjectMeta: metav1.ObjectMeta{Name: "stencil-test-kinds", Labels: map[string]string{aggregateLabel: "true"}},
	Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"*"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"update", "patch"}},
	},
}

// controllerConfig installs the controller's own RBAC from config/rbac
// (role.yaml, aggregate.yaml, role_binding.yaml) and its ServiceAccount
// stencil-system/stencil, and returns a config that authenticates as that
// ServiceAccount with a token: the tests' controller runs with exactly the
// permissions a real installation grants, not as a cluster admin. Most
// tests' controllers write as themselves (StartController), so
// the installation is config/write-as-controller's: its ClusterRole
// stencil-write-as-controller too. envtest runs no
// kube-controller-manager, so the test does the ClusterRole aggregation
// itself.
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
	if err := createAll(ctx, admin, filepath.Join(testenv.Root(), "config", "components", "write-as-controller", "role.yaml")); err != nil {
		return nil, err
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
// aggregationRule selects (listed again, and written again, on a
// conflict). It returns once the API server's authorizer grants them to
// the controller's ServiceAccount, which config/rbac binds stencil-apply
// to: the authorizer reads RBAC from informers, and the controller,
// refused in between, stalls Forbidden and looks again only a minute
// later.
func aggregate(ctx context.Context, c client.Client, name string) error {
	target := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testenv.Retry(ctx, c, target, func() error {
		var roles rbacv1.ClusterRoleList
		if err := c.List(ctx, &roles, client.MatchingLabels{aggregateLabel: "true"}); err != nil {
			return err
		}
		target.Rules = nil
		for _, r := range roles.Items {
			target.Rules = append(target.Rules, r.Rules...)
		}
		return c.Update(ctx, target)
	}); err != nil {
		return err
	}
	// The authorizer sees a ClusterRole's new version whole: one access
	// of each rule tells that every one of them is in effect.
	var probes []rbacv1.PolicyRule
	for _, r := range target.Rules {
		p := rbacv1.PolicyRule{Verbs: r.Verbs[:min(1, len(r.Verbs))]}
		if len(r.NonResourceURLs) > 0 {
			p.NonResourceURLs = r.NonResourceURLs[:1]
		} else {
			p.APIGroups, p.Resources, p.ResourceNames = r.APIGroups[:min(1, len(r.APIGroups))], r.Resources[:min(1, len(r.Resources))], r.ResourceNames[:min(1, len(r.ResourceNames))]
		}
		probes = append(probes, p)
	}
	ctx, cancel := context.WithTimeout(ctx, testenv.Timeout)
	defer cancel()
	return testenv.Granted(ctx, c, testenv.ServiceAccountSubject(testenv.ControllerNamespace, "stencil"), "", probes...)
}
