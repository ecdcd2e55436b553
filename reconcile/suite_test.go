package reconcile_test

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// The package's suite (suite.Suite), and short names for what its
// tests use most.
var (
	env *suite.Suite
	// k is env.Client: a non-cached client for assertions, as a cluster
	// admin, outside the controller's transport.
	k client.Client
	// controller is env.Controller, the package's controller
	// (restartController replaces it).
	controller *testenv.Controller
	// controllerCfg authenticates as the controller's ServiceAccount.
	controllerCfg *rest.Config
	// suiteCtx ends with the tests.
	suiteCtx context.Context
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, &env, func(ctx context.Context, s *suite.Suite) error {
		k, controller, controllerCfg, suiteCtx = s.Client, s.Controller, s.ControllerConfig, ctx
		return nil
	}))
}

// restartController restarts the package's controller
// (suite.Suite.Restart), running whileDown while it is down.
func restartController(t *testing.T, whileDown func()) {
	t.Helper()
	env.Restart(t, whileDown)
	controller = env.Controller
}

// The helpers below are the suite's (suite.Suite, package testenv),
// under the short names this package's tests use.

// eventually polls cond until it holds (testenv.Eventually, with its
// timeout).
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	testenv.Eventually(t, 0, what, cond)
}

// consistently checks that cond holds for d (testenv.Consistently).
func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, error)) {
	t.Helper()
	testenv.Consistently(t, d, what, cond)
}

// condition is env.Condition: it waits until the Composition's condition
// typ has status want at its generation, with one of reasons when any
// are given, and returns the Composition as it then was.
func condition(t *testing.T, ns, name, typ string, want metav1.ConditionStatus, reasons ...string) *v1alpha1.Composition {
	t.Helper()
	return env.Condition(t, ns, name, typ, want, reasons...)
}

// compositionWith is env.CompositionWith.
func compositionWith(t *testing.T, ns, name string, want ...testenv.Condition) *v1alpha1.Composition {
	t.Helper()
	return env.CompositionWith(t, ns, name, want...)
}

// stalled is env.Stalled: it waits until Composition ns/name is Stalled
// at its generation with reason ("" any) and a message holding every one
// of parts, and returns the Stalled condition.
func stalled(t *testing.T, ns, name, reason string, parts ...string) *metav1.Condition {
	t.Helper()
	return env.Stalled(t, ns, name, reason, parts...)
}

// gone waits until obj no longer exists (env.Gone).
func gone(t *testing.T, obj client.Object) {
	t.Helper()
	env.Gone(t, obj)
}

// exists waits until obj exists and reads it into obj (env.Exists).
func exists(t *testing.T, obj client.Object) {
	t.Helper()
	env.Exists(t, obj)
}

// mustCreate is env.MustCreate.
func mustCreate(t testing.TB, obj client.Object) {
	t.Helper()
	env.MustCreate(t, obj)
}

// bundle creates a cluster-scoped Bundle (named after the test) and
// deletes it after (env.Bundle).
func bundle(t testing.TB, name string, files map[string]string, mutate ...func(*v1alpha1.BundleSpec)) *v1alpha1.Bundle {
	t.Helper()
	return env.Bundle(t, name, files, mutate...)
}

// composition is suite.Composition.
func composition(ns, name, bundle, values string) *v1alpha1.Composition {
	return suite.Composition(ns, name, bundle, values)
}

// updateFresh reads obj and calls write, again on a conflict (env.Retry):
// for a test's read-then-update of an object the controller also writes.
func updateFresh(ctx context.Context, obj client.Object, write func() error) error {
	return env.Retry(ctx, obj, write)
}

// update re-reads the Composition, changes it and writes it back, again
// on a conflict (env.UpdateComposition).
func update(t *testing.T, c *v1alpha1.Composition, change func(*v1alpha1.Composition)) {
	t.Helper()
	env.UpdateComposition(t, c, change)
}

// writesIn returns the write requests controller c sent since mark in
// namespace ns (see testenv.Controller.WritesSince: an event an earlier pass
// emitted, sent late, is none).
func writesIn(c *testenv.Controller, since testenv.Mark, ns string) []string {
	return c.WritesSince(since, ns)
}
