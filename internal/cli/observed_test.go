package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

// TestRenderObserved: offline, render shows the controller's first pass
// of the endpoint example (the ConfigMap that waits for the Service's
// clusterIP held back, said on stderr); online, once the controller has
// applied it, render reads the live Service as the user and prints the
// ConfigMap the controller applied, and diff sees nothing to change.
func TestRenderObserved(t *testing.T) {
	ctx := context.Background()
	root := testenv.Root()
	dir := filepath.Join(root, "examples", "bundles", "endpoint")
	out, errOut, code := stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "fe", "-n", "default")
	if code != 0 {
		t.Fatalf("render --offline: exit %d: %s", code, errOut)
	}
	if objs := renderedObjects(t, out); len(objs) != 1 || objs[0].GetKind() != "Service" {
		t.Errorf("offline render printed %d objects, want the Service alone:\n%s", len(objs), out)
	}
	if !strings.Contains(errOut, "ConfigMap/fe-endpoint held back, waiting for web spec.clusterIP") {
		t.Errorf("offline render did not say what is held back: %q", errOut)
	}

	k := controller.Client
	ns := testenv.Namespace(t, k)
	loaded, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "endpoint"})
	if err != nil {
		t.Fatal(err)
	}
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "endpoint-" + ns}, Spec: loaded.Spec()}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), b) })
	comp := fmt.Sprintf("apiVersion: stencil.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: fe\n  namespace: %s\nspec:\n  bundle: %s\n", ns, b.Name)
	kubectl(t, comp, "apply", "-f", "-")
	cm := &corev1.ConfigMap{}
	eventually(t, "the controller to apply the ConfigMap", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fe-endpoint"}, cm)
		return err == nil, err
	})
	svc := &corev1.Service{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fe-web"}, svc); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = stencil(t, comp, "render", "-f", "-")
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, errOut)
	}
	var url string
	for _, o := range renderedObjects(t, out) {
		if o.GetName() == "fe-endpoint" {
			url = o.Object["data"].(map[string]any)["url"].(string)
		}
	}
	if want := "http://" + svc.Spec.ClusterIP + ":8080"; url != want || cm.Data["url"] != want {
		t.Errorf("online render's url %q, the controller's %q, want both %q", url, cm.Data["url"], want)
	}
	if strings.Contains(errOut, "held back") {
		t.Errorf("online render held back what the controller applied: %q", errOut)
	}
	if out, errOut, code := stencil(t, comp, "diff", "-f", "-"); code != 0 {
		t.Errorf("diff after reconcile: exit %d, want 0\n%s%s", code, out, errOut)
	}
}
