package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// instanceYAML is an instance of a published AppService, as the
// kubebuilder article writes it.
func instanceYAML(apiVersion, ns, name string, size int) string {
	return fmt.Sprintf("apiVersion: %s\nkind: AppService\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  size: %d\n", apiVersion, name, ns, size)
}

// TestRenderInstanceOffline: render -f takes an instance of the kind a
// --bundle folder publishes, renders it as the controller would (its spec
// as values, itself the ApplySet parent), beside Compositions in the same
// file; a folder that does not publish the kind is a clear error.
func TestRenderInstanceOffline(t *testing.T) {
	dir := appServiceFolder(t, appServiceAPI, `{"type":"object"}`)
	in := instanceYAML("app.example.com/v1", "team", "web", 3)
	out, errOut, code := stencil(t, in+"---\n"+compositionYAML("team", "plain", "whatever", `{"size": 4}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	instanceID := applyset.ID("web", "team", schema.GroupKind{Group: "app.example.com", Kind: "AppService"})
	for _, want := range []string{
		"name: web\n  namespace: team", `size: "3"`, "applyset.kubernetes.io/part-of: " + instanceID,
		"name: plain\n  namespace: team", `size: "4"`, "applyset.kubernetes.io/part-of: " + applyset.ID("plain", "team", applyset.CompositionGroupKind),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output:\n%s\nwant it to contain %q", out, want)
		}
	}

	plain := writeBundle(t, map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"})
	tests := []struct {
		name, file, bundle, want string
	}{
		{"a folder publishing no kind", in, plain, "publishes no kind"},
		{"another version of the kind", instanceYAML("app.example.com/v2", "team", "web", 1), dir, "app.example.com/v2 AppService is not a version Bundle " + filepath.Base(dir) + " serves (it serves v1)"},
		{"another group", instanceYAML("other.example.com/v1", "team", "web", 1), dir, "not other.example.com/v1 AppService"},
		{"an instance without a name", "apiVersion: app.example.com/v1\nkind: AppService\nspec: {}\n", dir, "AppService has no metadata.name"},
		{"a Bundle is no parent", "apiVersion: stencil.dev/v1alpha1\nkind: Bundle\nmetadata:\n  name: b\n", dir, "want a stencil.dev/v1alpha1 Composition or an instance of a published kind"},
		{"a bad override", "apiVersion: app.example.com/v1\nkind: AppService\nmetadata:\n  name: web\n  annotations:\n    stencil.dev/prune: maybe\n", dir, `annotation stencil.dev/prune must be "true" or "false"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := stencil(t, tt.file, "render", "-f", "-", "--bundle", tt.bundle, "--offline")
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want an error saying %q", code, errOut, tt.want)
			}
		})
	}
}

// publishedBundle is appServiceBundle publishing AppService in group.
func publishedBundle(name, group string) string {
	return fmt.Sprintf(appServiceBundle, name) + fmt.Sprintf("  api:\n    group: %s\n    kind: AppService\n    version: v1\n", group)
}

// TestRenderAndDiffInstanceOnline: without --bundle, render and diff find
// the cluster's Bundle by the instance's kind; diff of a reconciled
// instance shows nothing, and a changed spec shows exactly the change.
func TestRenderAndDiffInstanceOnline(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	group := ns + ".example.com"
	kubectl(t, publishedBundle("pub-"+ns, group), "apply", "-f", "-")
	appServicesEstablished(t, k, group)
	t.Cleanup(func() {
		_ = k.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "appservices." + group}})
	})
	apiVersion := group + "/v1"
	in := fmt.Sprintf("apiVersion: %s\nkind: AppService\nmetadata:\n  name: web\n  namespace: %s\nspec:\n  replicas: 2\n", apiVersion, ns)

	out, errOut, code := stencil(t, in, "render", "-f", "-")
	if code != 0 || !strings.Contains(out, "kind: Deployment") || !strings.Contains(out, "replicas: 2") ||
		!strings.Contains(errOut, "AppService "+ns+"/web does not exist yet") {
		t.Fatalf("render: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = stencil(t, in, "diff", "-f", "-")
	if code != 1 || !strings.Contains(out, "+++ stencil/Deployment/"+ns+"/web") {
		t.Fatalf("diff before the instance exists: exit %d, want 1 and the Deployment created\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	// Established is not yet admitted: the policy's binding and
	// parameters for the kind reach the API server some time after.
	testenv.WaitKindChecked(t, k, objectOf(t, in), 0)
	kubectl(t, in, "apply", "-f", "-")
	applied(t, k, parentRef(apiVersion, "AppService", ns, "web"), 2)
	out, errOut, code = stencil(t, in, "diff", "-f", "-")
	if code != 0 || out != "" {
		t.Fatalf("diff right after reconcile: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no output", code, out, errOut)
	}
	changed := strings.Replace(in, "replicas: 2", "replicas: 3\n  service: false", 1)
	out, errOut, code = stencil(t, changed, "diff", "-f", "-")
	if code != 1 || !strings.Contains(out, "+  replicas: 3") || !strings.Contains(out, "# Service/"+ns+"/web would be pruned") {
		t.Errorf("diff after a spec change: exit %d, want 1, replicas 3 and the Service pruned\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	_, errOut, code = stencil(t, strings.Replace(in, apiVersion, "nobody."+group+"/v1", 1), "render", "-f", "-")
	if code == 0 || !strings.Contains(errOut, "no Bundle in the cluster publishes nobody."+group+"/v1 AppService") {
		t.Errorf("render of a kind no Bundle publishes: exit %d, stderr %q", code, errOut)
	}
}

// appServicesEstablished waits until the CRD of the AppService kind a
// Bundle publishes in group is Established.
func appServicesEstablished(t *testing.T, k client.Client, group string) {
	t.Helper()
	eventually(t, "the CRD of the published kind to be Established", func() (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k.Get(context.Background(), client.ObjectKey{Name: "appservices." + group}, crd); err != nil {
			return false, err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
