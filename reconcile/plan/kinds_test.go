package plan_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// approvedCRD is a CustomResourceDefinition as the charts that ship one
// in a group of Kubernetes' own write it: approved with the URL of its
// API review (annotation api-approved.kubernetes.io), which the API
// server requires there. extra is more metadata (indented two spaces).
func approvedCRD(group, kind, plural, scope, extra string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + plural + "." + group +
		"\n  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111\n" + extra +
		"spec:\n  group: " + group + "\n  names: {kind: " + kind + ", plural: " + plural + "}\n  scope: " + scope +
		"\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
}

// object is a manifest of kind in apiVersion named name.
func object(apiVersion, kind, name string) string {
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + name + "\n"
}

// mustCreate creates the manifest doc as a cluster admin and deletes it
// when the test ends.
func mustCreate(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := k.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), u) })
	return u
}

// servedByCRDs waits until the aggregator registered APIService name for
// a CustomResourceDefinition (label kube-aggregator.kubernetes.io/automanaged
// "true"), so that a test sees a group that only CRDs serve as the API
// server lists it.
func servedByCRDs(t *testing.T, name string) {
	t.Helper()
	s := &unstructured.Unstructured{}
	s.SetAPIVersion("apiregistration.k8s.io/v1")
	s.SetKind("APIService")
	testenv.Eventually(t, 0, "APIService "+name+" registered for a CRD", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKey{Name: name}, s)
		return err == nil && s.GetLabels()[cluster.LabelAutoRegistered] == "true", client.IgnoreNotFound(err)
	})
}

// TestKubernetesGroupCRDs (issue 40): a CRD that a chart renders, or
// ships in crds/, in a group of Kubernetes' own that the API server does
// not serve itself (external-dns's DNSEndpoint in externaldns.k8s.io, the
// Gateway API's in gateway.networking.k8s.io) is planned as any CRD, for
// the parent's account to apply: its RBAC decides, and the API server
// its approval annotation (a CRD without one is planned, and the API
// server refuses it). Still refused, with KindConflict naming why, as
// the controller, the admission webhook and the CLI plan online: a
// built-in kind, a new kind of a built-in group, a kind of an aggregated
// group, of a group the API server serves that the built-in list does
// not know, of stencil's group, a kind another CRD serves, and a CRD
// carrying a cluster admin's opt-in for a Bundle to publish. Offline, the
// verdicts that need no cluster are the same.
func TestKubernetesGroupCRDs(t *testing.T) {
	ctx := context.Background()
	s := rand.String(6)
	agg, own := "agg-"+s+".k8s.io", "own-"+s+".k8s.io"

	// The cluster: the Gateway API's GRPCRoute made by hand (so its group
	// is one CRDs serve), an aggregated group, and a group served locally
	// by an APIService the aggregator did not register for a CRD, as the
	// API server registers its own groups (a newer release's, say).
	grpc := mustCreate(t, approvedCRD("gateway.networking.k8s.io", "GRPCRoute", "grpcroutes", "Namespaced", ""))
	servedByCRDs(t, "v1.gateway.networking.k8s.io")
	testenv.WaitCreatable(t, k, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GRPCRoute", "metadata": map[string]any{"namespace": "default", "name": testenv.AdmissionProbe}}}, 0)
	mustCreate(t, "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1."+agg+
		"\nspec:\n  group: "+agg+"\n  version: v1\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n  insecureSkipTLSVerify: true\n  service: {namespace: default, name: nothing}\n")
	mustCreate(t, "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1."+own+
		"\nspec:\n  group: "+own+"\n  version: v1\n  groupPriorityMinimum: 1000\n  versionPriority: 15\n")

	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	optIn := "  labels:\n    stencil.dev/bundle: b\n"
	tests := []struct {
		name  string
		files map[string]string
		// conflict: what a KindConflict names, online; none: planned.
		conflict []string
		// online: the verdict needs the cluster (offline the CRD is planned).
		online bool
		// objects and crds: the kinds planned and the crds/ CRDs, when
		// planned.
		objects []string
		crds    []string
	}{
		// Planned: a group of Kubernetes' own that only CRDs serve.
		{name: "external-dns's DNSEndpoint", files: map[string]string{
			"templates/crd.yaml": approvedCRD("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints", "Namespaced", ""),
			"templates/e.yaml":   object("externaldns.k8s.io/v1", "DNSEndpoint", "e"),
		}, objects: []string{"CustomResourceDefinition", "DNSEndpoint"}},
		{name: "the Gateway API's CRDs in templates, beside a CRD of the group made by hand", files: map[string]string{
			"templates/classes.yaml": approvedCRD("gateway.networking.k8s.io", "GatewayClass", "gatewayclasses", "Cluster", ""),
			"templates/routes.yaml":  approvedCRD("gateway.networking.k8s.io", "HTTPRoute", "httproutes", "Namespaced", ""),
			"templates/class.yaml":   object("gateway.networking.k8s.io/v1", "GatewayClass", "c"),
			"templates/route.yaml":   object("gateway.networking.k8s.io/v1", "HTTPRoute", "r"),
		}, objects: []string{"CustomResourceDefinition", "CustomResourceDefinition", "GatewayClass", "HTTPRoute"}},
		{name: "the Gateway API's CRDs in a chart's crds/", files: map[string]string{
			"Chart.yaml":           chart,
			"crds/routes.yaml":     approvedCRD("gateway.networking.k8s.io", "HTTPRoute", "httproutes", "Namespaced", ""),
			"templates/route.yaml": object("gateway.networking.k8s.io/v1", "HTTPRoute", "r"),
		}, objects: []string{"HTTPRoute"}, crds: []string{"httproutes.gateway.networking.k8s.io"}},
		{name: "no approval annotation: the API server's to refuse", files: map[string]string{
			"templates/crd.yaml": strings.Replace(approvedCRD("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints", "Namespaced", ""),
				"  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111\n", "", 1),
		}, objects: []string{"CustomResourceDefinition"}},

		// Refused.
		{name: "Ingress, a built-in kind", files: map[string]string{
			"templates/crd.yaml": approvedCRD("networking.k8s.io", "Ingress", "ingresses", "Namespaced", ""),
		}, conflict: []string{"CustomResourceDefinition/ingresses.networking.k8s.io", "Ingress.networking.k8s.io", "a built-in kind"}},
		{name: "Ingress, a built-in kind, in crds/", files: map[string]string{
			"Chart.yaml":        chart,
			"crds/ingress.yaml": approvedCRD("networking.k8s.io", "Ingress", "ingresses", "Namespaced", ""),
		}, conflict: []string{"CustomResourceDefinition/ingresses.networking.k8s.io", "a built-in kind"}},
		{name: "a new kind of a built-in group", files: map[string]string{
			"templates/crd.yaml": approvedCRD("networking.k8s.io", "Gizmo", "gizmos", "Namespaced", ""),
		}, conflict: []string{"Gizmo.networking.k8s.io", "group networking.k8s.io is served by the API server itself"}},
		{name: "an aggregated group", online: true, files: map[string]string{
			"templates/crd.yaml": approvedCRD(agg, "Widget", "widgets", "Namespaced", ""),
		}, conflict: []string{"Widget." + agg, "aggregated API server (APIService v1." + agg + ")"}},
		{name: "an aggregated group, in crds/", online: true, files: map[string]string{
			"Chart.yaml":        chart,
			"crds/widgets.yaml": approvedCRD(agg, "Widget", "widgets", "Namespaced", ""),
		}, conflict: []string{"CustomResourceDefinition/widgets." + agg, "aggregated API server"}},
		{name: "a group the API server serves that the built-in list does not know", online: true, files: map[string]string{
			"templates/crd.yaml": approvedCRD(own, "Widget", "widgets", "Namespaced", ""),
		}, conflict: []string{"Widget." + own, "served by the API server itself (APIService v1." + own}},
		{name: "stencil's group", files: map[string]string{
			"templates/crd.yaml": approvedCRD("stencil.dev", "Gizmo", "gizmos", "Namespaced", ""),
		}, conflict: []string{"Gizmo.stencil.dev", "stencil's own"}},
		{name: "a kind another CRD serves", online: true, files: map[string]string{
			"templates/crd.yaml": approvedCRD("gateway.networking.k8s.io", "GRPCRoute", "grpcroutes", "Namespaced", ""),
		}, conflict: []string{"GRPCRoute.gateway.networking.k8s.io", "CustomResourceDefinition grpcroutes.gateway.networking.k8s.io serves and this set does not own"}},
		{name: "a Bundle's opt-in", files: map[string]string{
			"templates/crd.yaml": approvedCRD("sample.k8s.io", "Foo", "foos", "Namespaced", optIn),
		}, conflict: []string{"Foo.sample.k8s.io", "Kubernetes' own", "labelled stencil.dev/bundle: b", "only a cluster admin"}},
		{name: "a Bundle's opt-in, in crds/", files: map[string]string{
			"Chart.yaml":    chart,
			"crds/foo.yaml": approvedCRD("sample.k8s.io", "Foo", "foos", "Namespaced", optIn),
		}, conflict: []string{"CustomResourceDefinition/foos.sample.k8s.io", "labelled stencil.dev/bundle: b"}},
	}
	perms := v1alpha1.BundlePermissions{ClusterScoped: []v1alpha1.GroupKind{
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, {Group: "gateway.networking.k8s.io", Kind: "GatewayClass"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BundleSpec{Files: tt.files, Permissions: perms}})
			if err != nil {
				t.Fatal(err)
			}
			comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c"}, Spec: v1alpha1.CompositionSpec{Bundle: "b"}}
			in := plan.RenderInput(comp, nil, cluster.OfflineCapabilities())
			online, err := plan.NewPlan(ctx, testenv.InProcess{}, b, in, liveAPIs(t))
			checkVerdict(t, "online", online, err, tt.conflict, tt.objects, tt.crds)
			offline, err := plan.NewPlan(ctx, testenv.InProcess{}, b, in, cluster.OfflineAPIs())
			if tt.online {
				checkVerdict(t, "offline", offline, err, nil, nil, nil)
			} else {
				checkVerdict(t, "offline", offline, err, tt.conflict, tt.objects, tt.crds)
			}
		})
	}
	if err := k.Get(ctx, client.ObjectKeyFromObject(grpc), grpc); err != nil || len(grpc.GetLabels()) != 0 {
		t.Errorf("the hand-made CRD: labels %v (err %v); planning writes nothing", grpc.GetLabels(), err)
	}
}

// checkVerdict checks that a plan (p, err) is a KindConflict naming every
// one of conflict or, with none, planned objects of kinds objects (when
// given) and crds/ CRDs named crds.
func checkVerdict(t *testing.T, how string, p *plan.Plan, err error, conflict, objects, crds []string) {
	t.Helper()
	var refused *plan.RefusedError
	switch {
	case len(conflict) > 0:
		if !errors.As(err, &refused) || refused.ConditionReason() != v1alpha1.ReasonKindConflict {
			t.Fatalf("%s: err %v, want a KindConflict", how, err)
		}
		for _, w := range conflict {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: KindConflict %q does not say %q", how, err, w)
			}
		}
	case err != nil:
		t.Fatalf("%s: %v, want it planned", how, err)
	case objects != nil:
		var kinds, names []string
		for _, o := range p.Objects {
			kinds = append(kinds, o.GetKind())
		}
		for _, c := range p.CRDs {
			names = append(names, c.GetName())
		}
		slices.Sort(kinds)
		if diff := cmp.Diff(objects, kinds); diff != "" {
			t.Errorf("%s: kinds planned (-want +got):\n%s", how, diff)
		}
		if diff := cmp.Diff(crds, names); diff != "" {
			t.Errorf("%s: crds/ CRDs planned (-want +got):\n%s", how, diff)
		}
	}
}
