package cli_test

import (
	"strings"
	"testing"
)

// decoyBundle allows only CustomResourceDefinitions and renders one that
// declares rbac.authorization.k8s.io/ClusterRoleBinding Namespaced, next
// to a ClusterRoleBinding to cluster-admin.
func decoyBundle(t *testing.T) string {
	return writeBundle(t, map[string]string{
		"stencil.yaml": "permissions:\n  clusterScoped:\n  - {group: apiextensions.k8s.io, kind: CustomResourceDefinition}\n",
		"templates/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusterrolebindings.rbac.authorization.k8s.io
spec:
  group: rbac.authorization.k8s.io
  names: {kind: ClusterRoleBinding, plural: clusterrolebindings}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
		"templates/crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: decoy
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: default, namespace: default}
`,
	})
}

// TestOfflineRenderRefusesDecoyCRD: offline, a kind's scope comes from the
// built-in list (issue 20 item 4): `stencil render --offline` and `stencil
// bundle lint --offline` refuse the decoy CRD as the controller does,
// naming the CRD and the built-in kind it would shadow.
func TestOfflineRenderRefusesDecoyCRD(t *testing.T) {
	dir := decoyBundle(t)
	want := []string{"CustomResourceDefinition/clusterrolebindings.rbac.authorization.k8s.io", "ClusterRoleBinding.rbac.authorization.k8s.io"}
	out, errOut, code := stencil(t, compositionYAML("default", "c", "b", `{}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 1 || strings.Contains(out, "kind: ClusterRoleBinding") {
		t.Errorf("offline render of the decoy: exit %d, output:\n%s\nwant exit 1 and no ClusterRoleBinding", code, out)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("offline render of the decoy: stderr %q, want it to name %q", errOut, w)
		}
	}
	out, _, code = stencil(t, "", "bundle", "lint", dir, "--offline")
	if code == 0 {
		t.Errorf("offline lint of the decoy passed:\n%s", out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("offline lint of the decoy: output %q, want it to name %q", out, w)
		}
	}
}
