package config_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// writes returns the verbs of rule that write.
func writes(rule map[string]any) []string {
	verbs := stringSlice(rule, "verbs")
	return slices.DeleteFunc(slices.Clone(verbs), func(v string) bool { return v == "get" || v == "list" || v == "watch" })
}

// ownAdmission are the names of stencil's own admission objects, the only
// ones the controller may change, by resource.
var ownAdmission = map[string][]string{
	"validatingwebhookconfigurations":   {admission.DefaultWebhookConfigName},
	"mutatingwebhookconfigurations":     {admission.DefaultMutatingConfigName},
	"validatingadmissionpolicies":       {publish.AccessPolicyName},
	"validatingadmissionpolicybindings": {publish.AccessPolicyName},
}

// TestInstallRBAC (issue 37): as config/default and config/shards
// install it, the controller writes no kind a Bundle renders (it
// impersonates the parent's ServiceAccount for that): the ClusterRoles
// aggregated into stencil-apply read them, and write only the instances
// of published kinds (never create or delete them) and each such kind's
// binding of the admission policy by name; and it may change or delete
// no admission policy, binding or webhook configuration but stencil's
// own, by name (create cannot be limited by name in RBAC: it may create
// bindings, which only add checks). config/write-as-controller, and only
// it, adds the write verbs --write-as-controller needs and the flag.
func TestInstallRBAC(t *testing.T) {
	for _, dir := range []string{"default", "shards"} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			for name, role := range find(objs, "ClusterRole") {
				rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
				aggregated := role.GetLabels()[publish.LabelAggregateToManager] == "true"
				for _, r := range rules {
					rule := r.(map[string]any)
					w := writes(rule)
					if len(w) == 0 {
						continue
					}
					names := stringSlice(rule, "resourceNames")
					for _, res := range stringSlice(rule, "resources") {
						if own, ok := ownAdmission[res]; ok && slices.ContainsFunc(w, func(v string) bool { return v != "create" }) &&
							(len(names) == 0 || slices.ContainsFunc(names, func(n string) bool {
								return !slices.Contains(own, n) && !strings.HasPrefix(n, publish.AccessPolicyName+".")
							})) {
							t.Errorf("ClusterRole %s may %v %s %v, not only stencil's own (%v)", name, w, res, names, own)
						}
					}
					if !aggregated {
						continue
					}
					published := strings.HasPrefix(name, publish.ClusterRolePrefix)
					switch {
					case !published:
						t.Errorf("ClusterRole %s, aggregated into stencil-apply, may %v %v: the default install writes no rendered kind as the controller", name, w, stringSlice(rule, "resources"))
					case slices.Contains(w, "create") || slices.Contains(w, "deletecollection") || slices.Contains(w, "*"):
						t.Errorf("ClusterRole %s may %v %v: the controller never creates a published kind's instance", name, w, stringSlice(rule, "resources"))
					case slices.Contains(w, "delete") && (!slices.Equal(stringSlice(rule, "resources"), []string{"validatingadmissionpolicybindings"}) || len(names) != 1):
						t.Errorf("ClusterRole %s may delete %v %v: only its kind's binding, by name", name, stringSlice(rule, "resources"), names)
					}
				}
			}
			manager := find(objs, "ClusterRole")["stencil-manager"]
			for res, own := range ownAdmission {
				if !grantsNamed(manager, "admissionregistration.k8s.io", res, own, "update", "patch") {
					t.Errorf("ClusterRole stencil-manager does not let the controller update and patch %s %v", res, own)
				}
			}
			for name, d := range find(objs, "Deployment") {
				if args, _ := controllerArgs(t, d); slices.Contains(args, "--write-as-controller") {
					t.Errorf("Deployment %s writes as the controller", name)
				}
			}
		})
	}

	t.Run("write-as-controller", func(t *testing.T) {
		objs := build(t, "write-as-controller")
		role := find(objs, "ClusterRole")["stencil-write-as-controller"]
		if role == nil || role.GetLabels()[publish.LabelAggregateToManager] != "true" || !grants(role, "apps", "deployments", "create", "patch", "delete") {
			t.Fatalf("no ClusterRole stencil-write-as-controller aggregated into stencil-apply that writes Deployments: %v", role)
		}
		deployments := find(objs, "Deployment")
		if len(deployments) == 0 {
			t.Fatal("no Deployment")
		}
		for name, d := range deployments {
			args, _ := controllerArgs(t, d)
			if _, found := flag(args, "default-service-account"); found || !slices.Contains(args, "--write-as-controller") {
				t.Errorf("Deployment %s args %v: want --write-as-controller and no --default-service-account", name, args)
			}
		}
	})
}

// grantsNamed reports whether role has a rule for group and resource with
// every verb, limited to exactly names.
func grantsNamed(role *unstructured.Unstructured, group, resource string, names []string, verbs ...string) bool {
	if role == nil {
		return false
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		m := r.(map[string]any)
		if slices.Contains(stringSlice(m, "apiGroups"), group) && slices.Contains(stringSlice(m, "resources"), resource) &&
			slices.Equal(stringSlice(m, "resourceNames"), names) &&
			!slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains(stringSlice(m, "verbs"), v) }) {
			return true
		}
	}
	return false
}
