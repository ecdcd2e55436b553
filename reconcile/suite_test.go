package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/engine"
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
		scheme, err := engine.NewScheme()
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

// eventually polls cond until it holds (testenv.Eventually, with its
// timeout).
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	testenv.Eventually(t, 0, what, cond)
}

// consistently checks that cond holds for d.
func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, error)) {
	t.Helper()
	testenv.Consistently(t, d, what, cond)
}

// condition waits until the Composition's condition typ has status want at
// its generation, with one of reasons when any are given, and returns the
// Composition as it then was. Name every reason the test accepts: the
// first Stalled a loaded controller writes may be another's (a cache that
// has not yet seen the Bundle).
func condition(t *testing.T, ns, name, typ string, want metav1.ConditionStatus, reasons ...string) *v1alpha1.Composition {
	t.Helper()
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.WaitFor(t, k, comp, 0, testenv.Condition{Type: typ, Status: want, Reasons: reasons})
	return comp
}

// compositionWith waits until Composition ns/name has every condition of
// want at its generation (testenv.WaitFor) and returns it as it then was.
func compositionWith(t *testing.T, ns, name string, want ...testenv.Condition) *v1alpha1.Composition {
	t.Helper()
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.WaitFor(t, k, comp, 0, want...)
	return comp
}

// stalled waits until Composition ns/name is Stalled at its generation
// with reason ("" any) and a message holding every one of parts, and
// returns the Stalled condition.
func stalled(t *testing.T, ns, name, reason string, parts ...string) *metav1.Condition {
	t.Helper()
	want := testenv.Condition{Type: v1alpha1.ConditionStalled, Message: testenv.Says(parts...)}
	if reason != "" {
		want.Reasons = []string{reason}
	}
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return testenv.WaitFor(t, k, comp, 0, want)
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

// updateFresh reads obj and calls write, again on a conflict
// (testenv.Retry): for a test's read-then-update of an object the
// controller also writes.
func updateFresh(ctx context.Context, obj client.Object, write func() error) error {
	return testenv.Retry(ctx, k, obj, write)
}

// update re-reads the Composition, changes it and writes it back, again
// on a conflict.
func update(t *testing.T, c *v1alpha1.Composition, change func(*v1alpha1.Composition)) {
	t.Helper()
	testenv.Update(t, k, c, func() { change(c) })
}

// writesIn returns the write requests controller c sent since mark in
// namespace ns (see testenv.Controller.WritesSince: an event an earlier pass
// emitted, sent late, is none).
func writesIn(c *testenv.Controller, since testenv.Mark, ns string) []string {
	return c.WritesSince(since, ns)
}
