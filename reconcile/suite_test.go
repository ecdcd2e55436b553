package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile"
)

var (
	env *testenv.Env
	// k is a non-cached client for assertions, as a cluster admin, outside
	// the controller's transport.
	k client.Client
	// controller is stencil's controller, running for the whole package
	// (restartController replaces it).
	controller *testenv.Controller
	// controllerCfg authenticates as the controller's ServiceAccount.
	controllerCfg *rest.Config
	// suiteCtx ends with the tests; stopController stops controller.
	suiteCtx       context.Context
	stopController context.CancelFunc
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, func(ctx context.Context, e *testenv.Env) error {
		scheme, err := reconcile.NewScheme()
		if err != nil {
			return err
		}
		if k, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
			return err
		}
		// The controller runs as its own ServiceAccount with its own RBAC.
		if controllerCfg, err = controllerConfig(ctx, k, e.Config); err != nil {
			return err
		}
		suiteCtx = ctx
		ctrlCtx, cancel := context.WithCancel(ctx)
		stopController = cancel
		controller, err = testenv.StartController(ctrlCtx, controllerCfg)
		return err
	}))
}

// restartController stops the package's controller, runs whileDown, and
// starts a fresh one, as after a restart of the controller's Pod: it has
// no watch, no cache and no memory of earlier passes. Later tests use it.
func restartController(t *testing.T, whileDown func()) {
	t.Helper()
	stopController()
	select {
	case <-controller.Done:
	case <-time.After(time.Minute):
		t.Fatal("the controller did not stop within a minute")
	}
	whileDown()
	ctx, cancel := context.WithCancel(suiteCtx)
	c, err := testenv.StartController(ctx, controllerCfg)
	if err != nil {
		cancel()
		t.Fatalf("start the controller again: %v", err)
	}
	controller, stopController = c, cancel
}

// eventually polls cond until it holds or 30 seconds pass.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
	}
}

// consistently checks that cond holds for d.
func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, error)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ok, err := cond()
		if err != nil || !ok {
			t.Fatalf("%s stopped holding (err %v)", what, err)
		}
	}
}

// condition waits until the Composition's condition typ has status want and
// returns the Composition as it then was.
func condition(t *testing.T, ns, name, typ string, want metav1.ConditionStatus) *v1alpha1.Composition {
	t.Helper()
	comp := &v1alpha1.Composition{}
	eventually(t, fmt.Sprintf("Composition %s %s=%s", name, typ, want), func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, comp); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(comp.Status.Conditions, typ)
		if c == nil {
			return false, fmt.Errorf("no %s condition; conditions %+v", typ, comp.Status.Conditions)
		}
		return c.Status == want && comp.Status.ObservedGeneration == comp.Generation, fmt.Errorf("%s=%s: %s", typ, c.Status, c.Message)
	})
	return comp
}

// gone waits until obj no longer exists.
func gone(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s to be gone", obj, obj.GetName()), func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), err
	})
}

// exists waits until obj exists and reads it into obj.
func exists(t *testing.T, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s to exist", obj, obj.GetName()), func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return err == nil, err
	})
}

func mustCreate(t testing.TB, obj client.Object) {
	t.Helper()
	if err := k.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// bundle creates a cluster-scoped Bundle (named after the test) and deletes it after.
func bundle(t testing.TB, name string, files map[string]string, mutate ...func(*v1alpha1.BundleSpec)) *v1alpha1.Bundle {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleSpec{Files: files}}
	for _, m := range mutate {
		m(&b.Spec)
	}
	mustCreate(t, b)
	t.Cleanup(func() { _ = k.Delete(context.Background(), b) })
	return b
}

func composition(ns, name, bundle, values string) *v1alpha1.Composition {
	c := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.CompositionSpec{Bundle: bundle},
	}
	if values != "" {
		c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	return c
}

// updateFresh reads obj and calls write, again on a conflict: for a test's
// read-then-update of an object the controller also writes (a member, the
// Composition, the webhook configuration), which otherwise races the
// controller's own writes ("the object has been modified").
func updateFresh(ctx context.Context, obj client.Object, write func() error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return write()
	})
}

// update re-reads the Composition, changes it and writes it back.
func update(t *testing.T, c *v1alpha1.Composition, change func(*v1alpha1.Composition)) {
	t.Helper()
	eventually(t, "update of Composition "+c.Name, func() (bool, error) {
		if err := k.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		change(c)
		err := k.Update(context.Background(), c)
		return err == nil, err
	})
}

// writesIn returns the write requests (anything but GET) the controller c
// sent to namespace ns since its request number since (len of
// c.Requests() then): other tests' parents, gone or going, may still have
// passes and events of their own, which are not this test's.
func writesIn(c *testenv.Controller, since int, ns string) []string {
	var out []string
	for _, r := range c.Requests()[since:] {
		if !strings.HasPrefix(r, "GET ") && strings.Contains(r, "/namespaces/"+ns+"/") {
			out = append(out, r)
		}
	}
	return out
}
