package reconcile_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
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
