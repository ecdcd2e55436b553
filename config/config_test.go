// Package config_test checks the install manifests of config/ as kustomize
// builds them (`kubectl apply -k config/default`, `-k config/shards`): they
// build, and what the controller's flags expect is there.
package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/admission/serving"
	"github.com/stencil-dev/stencil/reconcile/authority"
)

// build runs kustomize over the folder dir of config/.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range res.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// find returns the objects of kind, by name.
func find(objs []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == kind {
			out[o.GetName()] = o
		}
	}
	return out
}

// controllerArgs returns the controller container's args and ports of a
// Deployment.
func controllerArgs(t *testing.T, d *unstructured.Unstructured) ([]string, []any) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Deployment %s: %d containers, want 1", d.GetName(), len(containers))
	}
	c := containers[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	return args, ports
}

// flag returns the value the last --name=value of args gives.
func flag(args []string, name string) (string, bool) {
	value, found := "", false
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

// podLabels returns the labels of a Deployment's pods.
func podLabels(d *unstructured.Unstructured) labels.Set {
	m, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	return m
}

// TestWebhookInstall: config/default and config/shards install the
// webhook configuration, calling one webhook Service in front of every controller pod, the shards' too, each
// serving the webhook on the container port named webhook from a mounted
// cert folder, and the controller may keep its certificate Secret and
// inject the CA.
func TestWebhookInstall(t *testing.T) {
	for _, dir := range []string{"default", "shards"} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			svc := find(objs, "Service")[serving.DefaultWebhookService]
			if svc == nil || svc.GetNamespace() != serving.DefaultWebhookNamespace {
				t.Fatalf("no Service %s/%s", serving.DefaultWebhookNamespace, serving.DefaultWebhookService)
			}
			if n := len(find(objs, "Service")); dir == "shards" && n != 2 {
				t.Errorf("%d Services, want the unsharded controller's two (a shard adds none)", n)
			}
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(443) || ports[0].(map[string]any)["targetPort"] != "webhook" {
				t.Errorf("Service %s ports %v, want 443 -> webhook", svc.GetName(), ports)
			}
			sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			servers := 0
			for name, d := range find(objs, "Deployment") {
				args, cports := controllerArgs(t, d)
				if sa, _ := flag(args, "default-service-account"); sa != "stencil" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--write-as-controller") }) {
					t.Errorf("Deployment %s: --default-service-account %q, want stencil set explicitly and no --write-as-controller", name, sa)
				}
				port, _ := flag(args, "webhook-port")
				selected := labels.SelectorFromSet(sel).Matches(podLabels(d))
				switch port {
				case "0":
					if selected {
						t.Errorf("Deployment %s does not serve the webhook (--webhook-port=0), but the Service selects its pods", name)
					}
				case "9443":
					servers++
					if !selected {
						t.Errorf("Deployment %s serves the webhook, but the Service does not select its pods", name)
					}
					if !slices.ContainsFunc(cports, func(p any) bool {
						m := p.(map[string]any)
						return m["name"] == "webhook" && m["containerPort"] == int64(9443)
					}) {
						t.Errorf("Deployment %s: no container port webhook 9443 in %v", name, cports)
					}
					if dir, _ := flag(args, "webhook-cert-dir"); !mounted(d, dir) {
						t.Errorf("Deployment %s: --webhook-cert-dir %q is not a mounted volume (the root file system is read-only)", name, dir)
					}
				default:
					t.Errorf("Deployment %s: --webhook-port %q, want 9443 or 0", name, port)
				}
			}
			if want := len(find(objs, "Deployment")); servers != want {
				t.Errorf("%d Deployments serve the webhook, want all %d", servers, want)
			}
			checkWebhookConfig(t, find(objs, "ValidatingWebhookConfiguration")[admission.DefaultWebhookConfigName])
			role := find(objs, "Role")["stencil-webhook-cert"]
			if role == nil || role.GetNamespace() != serving.DefaultWebhookNamespace {
				t.Fatalf("no Role %s/stencil-webhook-cert", serving.DefaultWebhookNamespace)
			}
			if !grants(role, "", "secrets", "get", "list", "watch", "create", "update") {
				t.Errorf("Role stencil-webhook-cert does not let the controller keep its certificate Secret")
			}
			// Issue 22 item 3: a Bundle's source Secrets are read in the
			// controller's own namespace only, never cluster-wide.
			if src := find(objs, "Role")["stencil-bundle-source"]; src == nil || src.GetNamespace() != serving.DefaultWebhookNamespace || !grants(src, "", "secrets", "get") {
				t.Errorf("no Role %s/stencil-bundle-source granting get secrets", serving.DefaultWebhookNamespace)
			}
			if grants(find(objs, "ClusterRole")["stencil-manager"], "", "secrets", "get") {
				t.Errorf("ClusterRole stencil-manager grants reading Secrets cluster-wide")
			}
			if manager := find(objs, "ClusterRole")["stencil-manager"]; !grants(manager, "admissionregistration.k8s.io", "validatingwebhookconfigurations", "get", "list", "watch") ||
				!grantsNamed(manager, "admissionregistration.k8s.io", "validatingwebhookconfigurations", []string{admission.DefaultWebhookConfigName}, "update") {
				t.Errorf("ClusterRole stencil-manager does not let the controller inject the CA into the webhook configuration")
			}
			checkAdmissionPolicy(t, objs)
		})
	}
}

// checkWebhookConfig checks that the configuration has its entry, calling
// the webhook Service at its handler's path: the render review, failing
// open (a stopped controller must not block the API server). Who may use
// a ServiceAccount is the admission policy's check (checkAdmissionPolicy).
func checkWebhookConfig(t *testing.T, cfg *unstructured.Unstructured) {
	t.Helper()
	if cfg == nil {
		t.Fatalf("no ValidatingWebhookConfiguration %s", admission.DefaultWebhookConfigName)
	}
	want := map[string]struct{ path, policy string }{
		admission.CompositionsWebhookName: {admission.WebhookPath, "Ignore"},
		admission.BundlesWebhookName:      {admission.BundleWebhookPath, "Ignore"},
	}
	hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	if len(hooks) != len(want) {
		t.Fatalf("ValidatingWebhookConfiguration %s has %d entries, want %d", cfg.GetName(), len(hooks), len(want))
	}
	for _, h := range hooks {
		m := h.(map[string]any)
		w, ok := want[m["name"].(string)]
		if !ok {
			t.Errorf("unexpected entry %v", m["name"])
			continue
		}
		svc, _, _ := unstructured.NestedMap(m, "clientConfig", "service")
		if svc["namespace"] != serving.DefaultWebhookNamespace || svc["name"] != serving.DefaultWebhookService || svc["path"] != w.path || svc["port"] != int64(443) {
			t.Errorf("entry %v calls %v, want %s/%s:443%s", m["name"], svc, serving.DefaultWebhookNamespace, serving.DefaultWebhookService, w.path)
		}
		if m["failurePolicy"] != w.policy {
			t.Errorf("entry %v: failurePolicy %v, want %s", m["name"], m["failurePolicy"], w.policy)
		}
	}
}

// mounted reports whether dir is the mount path of one of d's container's
// volume mounts.
func mounted(d *unstructured.Unstructured, dir string) bool {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	return dir != "" && slices.ContainsFunc(mounts, func(m any) bool { return m.(map[string]any)["mountPath"] == dir })
}

// grants reports whether a Role or ClusterRole has a rule for group and
// resource with every verb.
func grants(role *unstructured.Unstructured, group, resource string, verbs ...string) bool {
	if role == nil {
		return false
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		m := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		have, _, _ := unstructured.NestedStringSlice(m, "verbs")
		if slices.Contains(groups, group) && slices.Contains(resources, resource) &&
			!slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(have, v) }) {
			return true
		}
	}
	return false
}

// checkAdmissionPolicy checks that stencil's ValidatingAdmissionPolicy and
// its binding for Compositions are installed as package authority makes
// them (so that no Composition is admitted before the controller first
// runs), reading their parameters from the controller's namespace, and
// that the controller may keep them, bind published kinds and write the
// parameters there (a Role, not cluster-wide ConfigMaps).
func checkAdmissionPolicy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	policy := find(objs, "ValidatingAdmissionPolicy")[authority.PolicyName]
	if policy == nil {
		t.Fatalf("no ValidatingAdmissionPolicy %s", authority.PolicyName)
	}
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(authority.Policy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want["spec"], policy.Object["spec"]); diff != "" {
		t.Errorf("ValidatingAdmissionPolicy %s is not package authority's (-want +got):\n%s", authority.PolicyName, diff)
	}
	b := find(objs, "ValidatingAdmissionPolicyBinding")[authority.CompositionBindingName]
	if b == nil {
		t.Fatalf("no ValidatingAdmissionPolicyBinding %s", authority.CompositionBindingName)
	}
	wantB, err := runtime.DefaultUnstructuredConverter.ToUnstructured(authority.CompositionBinding(serving.DefaultWebhookNamespace))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantB["spec"], b.Object["spec"]); diff != "" {
		t.Errorf("ValidatingAdmissionPolicyBinding %s is not package authority's (-want +got):\n%s", authority.CompositionBindingName, diff)
	}
	manager := find(objs, "ClusterRole")["stencil-manager"]
	// Written by name only (TestInstallRBAC); a published kind's binding
	// by the name its own ClusterRole grants.
	for _, r := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		if !grants(manager, "admissionregistration.k8s.io", r, "get", "list", "watch", "create") ||
			!grantsNamed(manager, "admissionregistration.k8s.io", r, []string{authority.PolicyName}, "patch") {
			t.Errorf("ClusterRole stencil-manager does not let the controller keep %s", r)
		}
	}
	if grants(manager, "", "configmaps", "patch") {
		t.Errorf("ClusterRole stencil-manager lets the controller write ConfigMaps cluster-wide")
	}
	role := find(objs, "Role")["stencil-manager"]
	if role == nil || role.GetNamespace() != serving.DefaultWebhookNamespace || !grants(role, "", "configmaps", "get", "list", "watch", "create", "patch") {
		t.Errorf("no Role %s/stencil-manager letting the controller write the admission policy's parameters", serving.DefaultWebhookNamespace)
	}
	if rb := find(objs, "RoleBinding")["stencil-manager"]; rb == nil || rb.GetNamespace() != serving.DefaultWebhookNamespace {
		t.Errorf("no RoleBinding %s/stencil-manager", serving.DefaultWebhookNamespace)
	}
}
