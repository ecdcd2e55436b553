package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/gomodule"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

// bitnamiCharts pins bitnami/charts (commit c0703daaf78e of 2026-09-07,
// postgresql 17.1.1 on the common library 2.31.10), fetched through the
// Go module proxy.
var bitnamiCharts = gomodule.Module{
	Path:    "github.com/bitnami/charts",
	Version: "v0.0.0-20260907150927-c0703daaf78e",
	Sum:     "h1:68EPXIo1ixa5DpWiY+3J97oIktp4QFXjACbpR/4saBQ=",
}

// bitnamiPostgres is the postgresql chart of bitnamiCharts as `helm
// dependency build` leaves it, its common library in charts/common, as a
// Bundle.
func bitnamiPostgres(t *testing.T) *v1alpha1.Bundle {
	t.Helper()
	src, err := bitnamiCharts.Dir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "postgresql")
	if err := gomodule.CopyTree(filepath.Join(src, "bitnami", "postgresql"), dir); err != nil {
		t.Fatal(err)
	}
	if err := gomodule.CopyTree(filepath.Join(src, "bitnami", "common"), filepath.Join(dir, "charts", "common")); err != nil {
		t.Fatal(err)
	}
	b, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "postgresql"})
	if err != nil {
		t.Fatal(err)
	}
	return &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "postgresql"}, Spec: b.Spec()}
}

// TestBitnamiDatabase (issue 30 items 2 and 6): Bitnami's postgresql
// chart, unchanged, installed from a Bundle on the local cluster, becomes
// Ready. Its password Secret is made by the common library
// (common.secrets.passwords.manage: a lookup of the chart's own Secret,
// else randAlphaNum) and stays what it was first written as: after five
// restarts of the controller, each of which writes nothing in the
// namespace (no request but reads and server-side dry runs), and after a
// values change, which rolls the StatefulSet and leaves the password.
func TestBitnamiDatabase(t *testing.T) {
	root := testenv.Root()
	cfg, kubeconfig := localCluster(t, root)
	start := func() (*testenv.Controller, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		c, err := testenv.StartWith(ctx, cfg, testenv.ControllerOptions{})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return c, cancel
	}
	controller, stop := start()
	t.Cleanup(func() { stop() })
	k := controller.Client
	tenancy(t, newKubectl(t, kubeconfig), k, root)
	ctx := context.Background()
	comp, u := createDB(t, k)
	ready(t, k, u, 4*time.Minute)
	secret := func() map[string][]byte {
		t.Helper()
		s := &corev1.Secret{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-postgresql"}, s); err != nil {
			t.Fatal(err)
		}
		return s.Data
	}
	first := secret()
	if len(first["postgres-password"]) < 10 {
		t.Fatalf("Secret db-postgresql: postgres-password %d bytes, want a generated password", len(first["postgres-password"]))
	}
	same := func(a, b map[string][]byte) bool { return maps.EqualFunc(a, b, bytes.Equal) }

	for i := range 5 {
		stop()
		<-controller.Done
		controller, stop = start()
		k = controller.Client
		// The restarted controller renders the set once; nothing of it
		// changed, so it writes nothing in the namespace. Its writes are
		// counted once it has rendered and then made no write nor render
		// for a while: its passes are over, whatever time they took.
		testenv.Eventually(t, 3*time.Minute, "the restarted controller to render db", func() (bool, error) {
			return controller.Renders("default", "db") > 0, nil
		})
		settle(t, controller)
		if w := writesIn(controller, "default"); len(w) > 0 {
			t.Errorf("restart %d: the controller wrote %d times in namespace default: %v", i+1, len(w), w)
		}
		if !same(first, secret()) {
			t.Fatalf("restart %d: the password Secret changed", i+1)
		}
	}
	ready(t, k, u, 3*time.Minute)

	// A values change rolls the StatefulSet and keeps the password. The
	// controller writes the Composition too (its status, its metadata):
	// the change is made again on a conflict.
	testenv.Update(t, k, comp, func() {
		comp.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"primary":{"persistence":{"enabled":false},"podLabels":{"tier":"database"}}}`)}
	})
	sts := &appsv1.StatefulSet{}
	testenv.Eventually(t, 3*time.Minute, "the StatefulSet to carry the new pod label", func() (bool, error) {
		err := k.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-postgresql"}, sts)
		return err == nil && sts.Spec.Template.Labels["tier"] == "database", err
	})
	ready(t, k, u, 4*time.Minute)
	if !same(first, secret()) {
		t.Errorf("a values change changed the password Secret")
	}
}

// createDB creates Bundle postgresql (Bitnami's chart) and Composition
// default/db of it, and returns the Composition and its name as the
// unstructured object ready waits for.
func createDB(t *testing.T, k client.Client) (*v1alpha1.Composition, *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	if err := k.Create(ctx, bitnamiPostgres(t)); err != nil {
		t.Fatal(err)
	}
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: v1alpha1.CompositionSpec{
		Bundle: "postgresql",
		// The local cluster has no volume provisioner.
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"primary":{"persistence":{"enabled":false}}}`)},
	}}
	if err := k.Create(ctx, comp); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("stencil.dev/v1alpha1")
	u.SetKind("Composition")
	u.SetNamespace("default")
	u.SetName("db")
	return comp, u
}

// settle waits until controller c has made no write in namespace
// default and no render of db for a second, as long as the local cluster
// may take: a restarted controller's passes are over. It bounds nothing
// c does: a controller that keeps writing fails it, a slow one only makes
// it wait longer.
func settle(t *testing.T, c *testenv.Controller) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, "the controller to settle", func() (bool, error) {
		writes, renders := len(writesIn(c, "default")), c.Renders("default", "db")
		time.Sleep(time.Second)
		if w, r := len(writesIn(c, "default")), c.Renders("default", "db"); w != writes || r != renders {
			return false, fmt.Errorf("in a second, %d more writes and %d more renders", w-writes, r-renders)
		}
		return true, nil
	})
}

// writesIn are the write requests (anything but GET) controller c sent to
// namespace ns. A server-side dry run writes nothing and is not one: a
// restarted controller confirms with one, once per process, that a member
// whose fields the server defaults (the chart's NetworkPolicy) needs no
// write (package nochange).
func writesIn(c *testenv.Controller, ns string) []string {
	var out []string
	for _, r := range c.Requests() {
		if !strings.HasPrefix(r, "GET ") && strings.Contains(r, "/namespaces/"+ns+"/") && !strings.Contains(r, "dryRun=All") {
			out = append(out, r)
		}
	}
	return out
}
