package reconcile_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// absentNow checks that obj does not exist once the parent stalled: the
// pass refused it before applying anything.
func absentNow(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
		t.Errorf("%T %s exists (or cannot be read: %v): the refused render was applied", obj, obj.GetName(), err)
	}
}

// grantClusterRoleBindings gives the controller what a generous install
// would: to read and write ClusterRoleBindings and bind cluster-admin, so
// that only the scope check stands between the decoy and a binding.
func grantClusterRoleBindings(t *testing.T) {
	t.Helper()
	env.GrantController(t, "stencil-test-clusterrolebindings",
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterrolebindings"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"cluster-admin"}})
}

// TestDecoyCRDIsRefused: the API server's kinds win (issue 20 item 4). A
// Bundle allowed only CustomResourceDefinitions renders one that
// declares rbac.authorization.k8s.io/ClusterRoleBinding Namespaced, and a
// ClusterRoleBinding to cluster-admin: planning takes the binding's scope
// from the cluster, not from the decoy, so the Composition stalls with
// KindConflict naming the CRD and the kind it would shadow, and neither
// the binding nor the CRD is created.
func TestDecoyCRDIsRefused(t *testing.T) {
	ns := testenv.Namespace(t, k)
	grantClusterRoleBindings(t)
	b := bundle(t, "decoy-"+ns, map[string]string{
		"templates/crd.yaml": suite.CRDYAML("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", "Namespaced"),
		"templates/crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: decoy-` + ns + `
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: default, namespace: ` + ns + `}
`,
	}, suite.OnlyCRDs)
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "decoy-" + ns}}
	t.Cleanup(func() { _ = k.Delete(context.Background(), crb) })
	mustCreate(t, composition(ns, "decoy", b.Name, ""))
	stalled(t, ns, "decoy", v1alpha1.ReasonKindConflict,
		"CustomResourceDefinition/clusterrolebindings.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io")
	env.StillAbsent(t, crb)
	env.StillAbsent(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "clusterrolebindings.rbac.authorization.k8s.io"}})
}

// TestRenderedCRDShadowingServedKind: a rendered CustomResourceDefinition
// for a kind the cluster already serves (built in, or by a CRD this set
// does not own) is refused with KindConflict, and the CRD that serves it
// is left as it was.
func TestRenderedCRDShadowingServedKind(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	t.Run("a built-in kind", func(t *testing.T) {
		b := bundle(t, "builtin-crd-"+ns, map[string]string{
			"templates/crd.yaml": suite.CRDYAML("apps", "Deployment", "deployments", "Cluster"),
		}, suite.OnlyCRDs)
		mustCreate(t, composition(ns, "builtin", b.Name, ""))
		stalled(t, ns, "builtin", v1alpha1.ReasonKindConflict, "CustomResourceDefinition/deployments.apps", "Deployment.apps", "built-in")
	})
	t.Run("a kind another CRD serves", func(t *testing.T) {
		group := "g" + ns + ".example.com"
		hand := suite.MustYAML(t, suite.CRDYAML(group, "Gadget", "gadgets", "Namespaced"))
		if err := k.Create(ctx, hand); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.Delete(context.Background(), hand) })
		crd := env.Established(t, "gadgets."+group)
		// The kind is served: discovery lists it (some time after its CRD
		// is Established), so the pass finds what serves it.
		testenv.WaitCreatable(t, k, suite.Gadget(group, ns, testenv.AdmissionProbe, ""), 0)
		b := bundle(t, "shadow-crd-"+ns, map[string]string{
			"templates/crd.yaml": suite.CRDYAML(group, "Gadget", "gadgets", "Cluster"),
		}, suite.OnlyCRDs)
		mustCreate(t, composition(ns, "shadow", b.Name, ""))
		stalled(t, ns, "shadow", v1alpha1.ReasonKindConflict, "CustomResourceDefinition/gadgets."+group, "Gadget."+group)
		after := &apiextensionsv1.CustomResourceDefinition{}
		if err := k.Get(ctx, client.ObjectKey{Name: "gadgets." + group}, after); err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != crd.ResourceVersion || len(after.Labels) != 0 {
			t.Errorf("the hand-made CRD was changed: resourceVersion %s → %s, labels %v", crd.ResourceVersion, after.ResourceVersion, after.Labels)
		}
	})
}

// TestAggregatedGroupIsRefused: a group an aggregated API server serves
// (an APIService with a service) is no CRD's: a rendered CRD in it stalls
// its Composition with KindConflict, and a Bundle publishing a kind in it
// reports KindConflict; neither CRD is made.
func TestAggregatedGroupIsRefused(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	group := "agg-" + ns + ".example.com"
	apiService := suite.MustYAML(t, `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.`+group+`
spec:
  group: `+group+`
  version: v1
  groupPriorityMinimum: 1000
  versionPriority: 15
  insecureSkipTLSVerify: true
  service: {namespace: `+ns+`, name: nothing}
`)
	if err := k.Create(ctx, apiService); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), apiService) })

	b := bundle(t, "agg-crd-"+ns, map[string]string{"templates/crd.yaml": suite.CRDYAML(group, "Widget", "widgets", "Namespaced")}, suite.OnlyCRDs)
	mustCreate(t, composition(ns, "agg", b.Name, ""))
	stalled(t, ns, "agg", v1alpha1.ReasonKindConflict, "CustomResourceDefinition/widgets."+group, "Widget."+group, "APIService v1."+group)
	absentNow(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group}})

	env.GrantKind(t, group, "gadgets")
	pb := bundle(t, "agg-pub-"+ns, suite.GadgetFiles(""), suite.Publishing(group))
	c := env.BundleReady(t, pb.Name, metav1.ConditionFalse, v1alpha1.ReasonKindConflict)
	if !strings.Contains(c.Message, "APIService v1."+group) {
		t.Errorf("KindConflict message %q does not name the APIService", c.Message)
	}
	absentNow(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group}})
}

// gatewayRoutesCRD and dnsEndpointsCRD are CRDs as the Gateway API's
// charts and external-dns's ship them: in a group of Kubernetes' own,
// approved (api-approved.kubernetes.io, the URL of their API review) as
// the API server requires there.
var (
	gatewayRoutesCRD = approvedCRD("gateway.networking.k8s.io", "HTTPRoute", "httproutes")
	dnsEndpointsCRD  = approvedCRD("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints")
)

// approvedCRD is a namespaced CRD of kind in group, approved with a URL.
func approvedCRD(group, kind, plural string) string {
	return strings.Replace(suite.CRDYAML(group, kind, plural, "Namespaced"), `"unapproved, test"`, "https://github.com/kubernetes/enhancements/pull/1111", 1)
}

// TestKubernetesGroupCRDsAreTheAccounts (issue 40): a chart's CRDs in
// groups of Kubernetes' own that nothing but CRDs serves (external-dns's
// DNSEndpoint rendered by a template, the Gateway API's HTTPRoute in
// crds/) are applied as the parent's ServiceAccount, as any CRD, once its
// RBAC allows creating CRDs and the Bundle's permissions allow them; the
// custom resources of both kinds are applied too. The API server still
// has the last word on the approval it requires there: a CRD without
// api-approved.kubernetes.io stalls the parent Invalid, naming the
// annotation (not a KindConflict), and one "unapproved" is made, with
// KubernetesAPIApprovalPolicyConformant False. A built-in kind of
// networking.k8s.io (Ingress) stays a KindConflict naming why.
func TestKubernetesGroupCRDsAreTheAccounts(t *testing.T) {
	const shardName = "k8sgroups"
	env.StartWith(t, testenv.ControllerOptions{Shard: shardName})
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	env.TenantAccount(t, ns)
	account := testenv.ServiceAccountSubject(ns, "stencil")
	crdRules := []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
	kindRules := []rbacv1.PolicyRule{{APIGroups: []string{"externaldns.k8s.io", "gateway.networking.k8s.io"}, Resources: []string{"dnsendpoints", "httproutes"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
	crdRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "crds-" + ns}, Rules: crdRules}
	crdBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crds-" + ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: crdRole.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "stencil"}}}
	t.Cleanup(func() { _ = k.Delete(context.Background(), crdBinding); _ = k.Delete(context.Background(), crdRole) })
	mustCreate(t, crdRole)
	mustCreate(t, crdBinding)
	env.Grant(t, ns, "kinds", account.User, kindRules...)
	testenv.WaitGranted(t, k, account, ns, 0, append(crdRules, kindRules...)...)
	env.GrantController(t, "stencil-test-k8sgroups-"+ns, rbacv1.PolicyRule{APIGroups: kindRules[0].APIGroups, Resources: kindRules[0].Resources, Verbs: []string{"get", "list", "watch"}})
	labels := map[string]string{shard.Label: shardName}
	testenv.WaitAdmitted(t, k, ns, labels, 0)
	parent := func(name, bundleName string) *v1alpha1.Composition {
		c := composition(ns, name, bundleName, "")
		c.Labels = labels
		mustCreate(t, c)
		t.Cleanup(func() { // before the CRDs go: a live parent would make its own again
			_ = k.Delete(context.Background(), c)
			gone(t, c)
		})
		return c
	}
	crd := func(name string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	for _, name := range []string{"dnsendpoints.externaldns.k8s.io", "httproutes.gateway.networking.k8s.io"} {
		t.Cleanup(func() { _ = k.Delete(context.Background(), crd(name)) })
	}

	b := bundle(t, "k8sgroups-"+ns, map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: dns-and-routes\nversion: 0.1.0\n",
		"crds/httproutes.yaml":    gatewayRoutesCRD,
		"templates/dnscrd.yaml":   dnsEndpointsCRD,
		"templates/endpoint.yaml": "apiVersion: externaldns.k8s.io/v1\nkind: DNSEndpoint\nmetadata:\n  name: web\nspec:\n  endpoints: [{dnsName: web.example.com, recordType: A, targets: [192.0.2.1]}]\n",
		"templates/route.yaml":    "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: web\nspec:\n  hostnames: [web.example.com]\n",
	}, suite.OnlyCRDs)
	parent("app", b.Name)
	condition(t, ns, "app", v1alpha1.ConditionReady, metav1.ConditionTrue)
	dns, routes := crd("dnsendpoints.externaldns.k8s.io"), crd("httproutes.gateway.networking.k8s.io")
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{dns, routes} {
		if err := k.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			t.Fatal(err)
		}
	}
	if dns.Labels[applyset.LabelPartOf] == "" || routes.Labels[applyset.LabelPartOf] != "" {
		t.Errorf("part-of labels: the rendered CRD %q (want the set's), the crds/ CRD %q (want none)", dns.Labels[applyset.LabelPartOf], routes.Labels[applyset.LabelPartOf])
	}
	for _, kind := range [][2]string{{"externaldns.k8s.io/v1", "DNSEndpoint"}, {"gateway.networking.k8s.io/v1", "HTTPRoute"}} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(kind[0])
		u.SetKind(kind[1])
		if err := k.Get(ctx, key(ns, "web"), u); err != nil {
			t.Errorf("%s web: %v", kind[1], err)
		}
	}

	t.Run("the API server decides the approval", func(t *testing.T) {
		missing := strings.Replace(suite.CRDYAML("nx-"+ns+".k8s.io", "Gizmo", "gizmos", "Namespaced"), "  annotations:\n    api-approved.kubernetes.io: \"unapproved, test\"\n", "", 1)
		mb := bundle(t, "k8sgroups-missing-"+ns, map[string]string{"templates/crd.yaml": missing}, suite.OnlyCRDs)
		parent("missing", mb.Name)
		stalled(t, ns, "missing", v1alpha1.ReasonInvalid, "gizmos.nx-"+ns+".k8s.io", "api-approved.kubernetes.io")
		env.StillAbsent(t, crd("gizmos.nx-"+ns+".k8s.io"))
		cb := bundle(t, "k8sgroups-missing-crds-"+ns, map[string]string{
			"Chart.yaml":           "apiVersion: v2\nname: missing\nversion: 0.1.0\n",
			"crds/gizmos.yaml":     missing,
			"templates/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
		}, suite.OnlyCRDs)
		parent("missing-crds", cb.Name)
		stalled(t, ns, "missing-crds", v1alpha1.ReasonInvalid, "gizmos.nx-"+ns+".k8s.io (crds/)", "api-approved.kubernetes.io")
		env.StillAbsent(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}})

		name := "gizmos.un-" + ns + ".k8s.io"
		t.Cleanup(func() { _ = k.Delete(context.Background(), crd(name)) })
		ub := bundle(t, "k8sgroups-unapproved-"+ns, map[string]string{"templates/crd.yaml": suite.CRDYAML("un-"+ns+".k8s.io", "Gizmo", "gizmos", "Namespaced")}, suite.OnlyCRDs)
		parent("unapproved", ub.Name)
		condition(t, ns, "unapproved", v1alpha1.ConditionReady, metav1.ConditionTrue)
		eventually(t, "CRD "+name+" to say it is not approved", func() (bool, error) {
			live := crd(name)
			if err := k.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, c := range live.Status.Conditions {
				if c.Type == apiextensionsv1.KubernetesAPIApprovalPolicyConformant {
					return c.Status == apiextensionsv1.ConditionFalse && c.Reason == "UnapprovedAnnotation", nil
				}
			}
			return false, nil
		})
	})

	t.Run("a built-in kind of networking.k8s.io is still refused", func(t *testing.T) {
		ib := bundle(t, "k8sgroups-ingress-"+ns, map[string]string{"templates/crd.yaml": approvedCRD("networking.k8s.io", "Ingress", "ingresses")}, suite.OnlyCRDs)
		parent("ingress", ib.Name)
		stalled(t, ns, "ingress", v1alpha1.ReasonKindConflict, "CustomResourceDefinition/ingresses.networking.k8s.io", "Ingress.networking.k8s.io", "a built-in kind")
	})
}
