package config_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMetricsAndNetworkInstall: in config/default and config/shards the
// controller serves metrics over HTTPS on the port its metrics Service
// and NetworkPolicy name, may review scrapers' tokens and access, ships a
// ClusterRole for scrapers, and one NetworkPolicy selecting every
// controller pod opens only the webhook port and, to namespaces labelled
// metrics=enabled, the metrics port.
func TestMetricsAndNetworkInstall(t *testing.T) {
	for _, dir := range []string{"default", "shards"} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			for name, d := range find(objs, "Deployment") {
				args, ports := controllerArgs(t, d)
				if addr, _ := flag(args, "metrics-bind-address"); addr != ":8443" {
					t.Errorf("Deployment %s: --metrics-bind-address %q, want :8443", name, addr)
				}
				if secure, found := flag(args, "metrics-secure"); found && secure != "true" {
					t.Errorf("Deployment %s: --metrics-secure=%s", name, secure)
				}
				if !slices.ContainsFunc(ports, func(p any) bool {
					m := p.(map[string]any)
					return m["name"] == "metrics" && m["containerPort"] == int64(8443)
				}) {
					t.Errorf("Deployment %s: no container port metrics 8443 in %v", name, ports)
				}
			}
			auth := find(objs, "ClusterRole")["stencil-metrics-auth"]
			if !grants(auth, "authentication.k8s.io", "tokenreviews", "create") || !grants(auth, "authorization.k8s.io", "subjectaccessreviews", "create") {
				t.Errorf("ClusterRole stencil-metrics-auth does not let the controller review a scrape's token and access")
			}
			if b := find(objs, "ClusterRoleBinding")["stencil-metrics-auth"]; b == nil || !bindsController(b) {
				t.Errorf("ClusterRole stencil-metrics-auth is not bound to the controller's ServiceAccount")
			}
			reader := find(objs, "ClusterRole")["stencil-metrics-reader"]
			rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
			if len(rules) != 1 || !slices.Equal(stringSlice(rules[0], "nonResourceURLs"), []string{"/metrics"}) || !slices.Equal(stringSlice(rules[0], "verbs"), []string{"get"}) {
				t.Errorf("ClusterRole stencil-metrics-reader rules %v, want get /metrics only", rules)
			}

			policies := find(objs, "NetworkPolicy")
			np := policies["stencil-controller"]
			if len(policies) != 1 || np == nil {
				t.Fatalf("NetworkPolicies %v, want stencil-controller", policies)
			}
			sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
			for name, d := range find(objs, "Deployment") {
				if !labels.SelectorFromSet(sel).Matches(podLabels(d)) {
					t.Errorf("NetworkPolicy does not select the pods of Deployment %s", name)
				}
			}
			ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
			open := map[int64]string{}
			for _, r := range ingress {
				from, _, _ := unstructured.NestedSlice(r.(map[string]any), "from")
				ports, _, _ := unstructured.NestedSlice(r.(map[string]any), "ports")
				for _, p := range ports {
					port := p.(map[string]any)["port"].(int64)
					switch {
					case len(from) == 0:
						open[port] = "anywhere"
					case len(from) == 1:
						ns, _, _ := unstructured.NestedStringMap(from[0].(map[string]any), "namespaceSelector", "matchLabels")
						open[port] = labels.Set(ns).String()
					default:
						open[port] = "several"
					}
				}
			}
			want := map[int64]string{9443: "anywhere", 8443: "metrics=enabled"}
			if len(open) != len(want) || open[9443] != want[9443] || open[8443] != want[8443] {
				t.Errorf("NetworkPolicy opens %v, want %v", open, want)
			}
		})
	}
}

// bindsController reports whether a binding's only subject is the
// controller's ServiceAccount.
func bindsController(b *unstructured.Unstructured) bool {
	subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
	if len(subjects) != 1 {
		return false
	}
	s := subjects[0].(map[string]any)
	return s["kind"] == "ServiceAccount" && s["name"] == "stencil" && s["namespace"] == "stencil-system"
}

func stringSlice(m any, field string) []string {
	s, _, _ := unstructured.NestedStringSlice(m.(map[string]any), field)
	return s
}
