package cli_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// k8sGroupCRD is a namespaced CRD of kind in group, with metadata
// annotations as given ("" for none).
func k8sGroupCRD(group, kind, plural, annotations string) string {
	meta := ""
	if annotations != "" {
		meta = "  annotations:\n    " + annotations + "\n"
	}
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + plural + "." + group + "\n" + meta +
		"spec:\n  group: " + group + "\n  names: {kind: " + kind + ", plural: " + plural + "}\n  scope: Namespaced\n" +
		"  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]\n"
}

// approved is the annotation that approves a CRD in a group of
// Kubernetes' own, as the Gateway API's and external-dns's carry it.
const approved = "api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1111"

// TestKubernetesGroupCRDPreviews (issue 40): `stencil render` (offline
// and online), `stencil bundle lint` (offline and online) and `stencil
// diff` give a chart's CRDs in groups of Kubernetes' own the controller's
// verdict. external-dns's DNSEndpoint in a template and the Gateway API's
// HTTPRoute in crds/ are planned, their custom resources placed in the
// parent's namespace; an Ingress CRD (a built-in kind of
// networking.k8s.io) is a KindConflict everywhere, naming why. A crds/
// CRD without the approval annotation is planned (render prints it), and
// lint says the API server would refuse it, offline and online.
func TestKubernetesGroupCRDPreviews(t *testing.T) {
	ns := testenv.Namespace(t, controller.Client)
	perms := "permissions:\n  clusterScoped: [{group: apiextensions.k8s.io, kind: CustomResourceDefinition}]\n"
	chart := "apiVersion: v2\nname: dns-and-routes\nversion: 0.1.0\n"
	files := map[string]string{
		"Chart.yaml":            chart,
		"stencil.yaml":          perms,
		"crds/httproutes.yaml":  k8sGroupCRD("gateway.networking.k8s.io", "HTTPRoute", "httproutes", approved),
		"templates/dnscrd.yaml": k8sGroupCRD("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints", approved),
	}
	// Online, lint and diff dry-run the objects against the cluster,
	// which serves neither kind before the controller made the CRDs:
	// they get the CRDs alone.
	onlyCRDs := writeBundle(t, files)
	files["templates/endpoint.yaml"] = "apiVersion: externaldns.k8s.io/v1\nkind: DNSEndpoint\nmetadata:\n  name: web\n"
	files["templates/route.yaml"] = "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: web\n"
	ok := writeBundle(t, files)
	for _, mode := range [][]string{{"--offline"}, nil} {
		out, errOut, code := stencil(t, "", append([]string{"render", "--include-crds", "--bundle", ok, "--name", "app", "-n", ns}, mode...)...)
		if code != 0 {
			t.Fatalf("render %v: exit %d: %s", mode, code, errOut)
		}
		got := map[string]string{}
		for _, o := range renderedObjects(t, out) {
			got[o.GetKind()+"/"+o.GetName()] = o.GetNamespace()
		}
		want := map[string]string{"CustomResourceDefinition/httproutes.gateway.networking.k8s.io": "", "CustomResourceDefinition/dnsendpoints.externaldns.k8s.io": "",
			"DNSEndpoint/web": ns, "HTTPRoute/web": ns}
		for k, v := range want {
			if g, found := got[k]; !found || g != v {
				t.Errorf("render %v: %s in namespace %q (printed: %t), want %q; printed %v", mode, k, g, found, v, got)
			}
		}
	}
	if out, _, code := stencil(t, "", "bundle", "lint", ok, "--offline"); code != 0 {
		t.Errorf("offline lint: exit %d:\n%s", code, out)
	}
	if out, _, code := stencil(t, "", "bundle", "lint", onlyCRDs); code != 0 {
		t.Errorf("lint: exit %d:\n%s", code, out)
	}
	out, errOut, code := stencil(t, compositionYAML(ns, "app", "ok", `{}`), "diff", "-f", "-", "--bundle", onlyCRDs)
	if code != 1 || !strings.Contains(out, "+++ stencil/CustomResourceDefinition/dnsendpoints.externaldns.k8s.io") || !strings.Contains(out, "CustomResourceDefinition httproutes.gateway.networking.k8s.io would be created (crds/)") {
		t.Errorf("diff: exit %d, want 1 and both CRDs created:\n%s\n%s", code, out, errOut)
	}

	t.Run("a built-in kind", func(t *testing.T) { builtinKindPreviews(t, ns, perms) })
	t.Run("no approval annotation", func(t *testing.T) { unapprovedPreviews(t, ns, perms, chart) })
}

// builtinKindPreviews: an Ingress CRD is a KindConflict for render,
// lint (offline and online) and diff, naming why.
func builtinKindPreviews(t *testing.T, ns, perms string) {
	ingress := writeBundle(t, map[string]string{
		"stencil.yaml":       perms,
		"templates/crd.yaml": k8sGroupCRD("networking.k8s.io", "Ingress", "ingresses", approved),
	})
	want := []string{"CustomResourceDefinition/ingresses.networking.k8s.io", "Ingress.networking.k8s.io", "a built-in kind"}
	says := func(what, text string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q does not say %q", what, text, w)
			}
		}
	}
	for _, mode := range [][]string{{"--offline"}, nil} {
		_, errOut, code := stencil(t, "", append([]string{"render", "--bundle", ingress, "--name", "app", "-n", ns}, mode...)...)
		if code == 0 {
			t.Errorf("render %v of the Ingress CRD: exit 0", mode)
		}
		says("render", errOut)
		out, _, code := stencil(t, "", append([]string{"bundle", "lint", ingress}, mode...)...)
		if code == 0 {
			t.Errorf("lint %v of the Ingress CRD: exit 0", mode)
		}
		says("lint", out)
	}
	out, errOut, code := stencil(t, compositionYAML(ns, "app", "ingress", `{}`), "diff", "-f", "-", "--bundle", ingress)
	if code < 1 {
		t.Errorf("diff of the Ingress CRD: exit %d:\n%s", code, out)
	}
	says("diff", out+errOut)

}

// unapprovedPreviews: a crds/ CRD without the approval annotation renders,
// and lint says the API server would refuse it, offline and online.
func unapprovedPreviews(t *testing.T, ns, perms, chart string) {
	missing := writeBundle(t, map[string]string{
		"Chart.yaml":          chart,
		"stencil.yaml":        perms,
		"crds/endpoints.yaml": k8sGroupCRD("externaldns.k8s.io", "DNSEndpoint", "dnsendpoints", ""),
	})
	if _, errOut, code := stencil(t, "", "render", "--offline", "--include-crds", "--bundle", missing, "--name", "app", "-n", ns); code != 0 {
		t.Errorf("render of a CRD without approval: exit %d: %s", code, errOut)
	}
	for _, mode := range [][]string{{"--offline"}, nil} {
		out, _, code := stencil(t, "", append([]string{"bundle", "lint", missing}, mode...)...)
		if code != 1 || !strings.Contains(out, "dnsendpoints.externaldns.k8s.io: metadata.annotations[api-approved.kubernetes.io]") || strings.Contains(out, "KindConflict") {
			t.Errorf("lint %v of a crds/ CRD without approval: exit %d, want 1 and the API server's reason:\n%s", mode, code, out)
		}
	}
}
