package suite

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/internal/testenv"

	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Suite is one package's envtest suite: the control plane, a cluster
// admin's client and stencil's controller, running as its own
// ServiceAccount with config/rbac's permissions for the whole package.
// A package's suite_test.go holds a *Suite and a TestMain:
//
//	var env *suite.Suite
//
//	func TestMain(m *testing.M) { os.Exit(suite.Run(m, &env)) }
//
// Its tests share the controller, each in its own namespace
// (Namespace), and fail through the helpers of this file and its
// neighbours (suite_*.go), which wait for the state they are asked for.
type Suite struct {
	// Env is the control plane (its Config is a cluster admin's).
	*testenv.Env
	// Client is a non-cached client of a cluster admin, outside the
	// controller's transport, for the tests' reads, writes and
	// assertions: env.Get, env.Create and so on.
	client.Client
	// Controller is the package's controller (StartController's, writing
	// as itself). Restart replaces it.
	Controller *testenv.Controller
	// ControllerConfig authenticates as the controller's ServiceAccount
	// stencil-system/stencil: start other controllers with it.
	ControllerConfig *rest.Config

	ctx            context.Context
	stopController context.CancelFunc
	// touches numbers the labels TouchLabel writes, so that each is a change.
	touches atomic.Int64
}

// Run is the body of a package's TestMain (see Suite): it starts
// the control plane (Run), installs the controller's ServiceAccount and
// RBAC, starts the package's controller, stores the suite in *s, runs
// each setup, runs the tests and returns the exit code.
func Run(m *testing.M, s **Suite, setup ...func(context.Context, *Suite) error) int {
	var e *testenv.Env
	return testenv.Run(m, &e, func(ctx context.Context, e *testenv.Env) error {
		suite, err := newSuite(ctx, e)
		if err != nil {
			return err
		}
		*s = suite
		for _, f := range setup {
			if err := f(ctx, suite); err != nil {
				return err
			}
		}
		return nil
	})
}

// RunServing is Run with the package's controller serving its webhooks
// (the admission webhooks and the conversion webhook of the published
// kinds with several versions) for a copy of config/webhook named name
// that selects every namespace (testenv.InstallWebhooks). Restart starts
// a controller that serves none.
func RunServing(m *testing.M, s **Suite, name string, setup ...func(context.Context, *Suite) error) int {
	var e *testenv.Env
	return testenv.Run(m, &e, func(ctx context.Context, e *testenv.Env) error {
		hooks, err := testenv.InstallWebhooks(e.Config, name, nil)
		if err != nil {
			return err
		}
		suite, err := newSuiteWith(ctx, e, testenv.ControllerOptions{WriteAsController: true, Webhooks: hooks,
			Admission: admission.Options{ConfigName: name, MutatingConfigName: name + "-mutating"}})
		if err != nil {
			return err
		}
		*s = suite
		for _, f := range setup {
			if err := f(ctx, suite); err != nil {
				return err
			}
		}
		return nil
	})
}

// newSuite makes the admin's client and the controller's identity, and
// starts the controller, under ctx (the tests').
func newSuite(ctx context.Context, e *testenv.Env) (*Suite, error) {
	return newSuiteWith(ctx, e, testenv.ControllerOptions{WriteAsController: true})
}

// newSuiteWith is newSuite with the controller started with o.
func newSuiteWith(ctx context.Context, e *testenv.Env, o testenv.ControllerOptions) (*Suite, error) {
	scheme, err := engine.NewScheme()
	if err != nil {
		return nil, err
	}
	s := &Suite{Env: e, ctx: ctx}
	if s.Client, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if s.ControllerConfig, err = controllerConfig(ctx, s.Client, e.Config); err != nil {
		return nil, err
	}
	ctrlCtx, cancel := context.WithCancel(ctx)
	if s.Controller, err = testenv.StartWith(ctrlCtx, s.ControllerConfig, o); err != nil {
		cancel()
		return nil, err
	}
	s.stopController = cancel
	return s, nil
}

// Context ends when the package's tests end: the parent of the
// contexts of the controllers a test starts itself.
func (s *Suite) Context() context.Context { return s.ctx }

// Restart stops the package's controller, runs whileDown, and starts a
// fresh one in s.Controller, as after a restart of the controller's
// Pod: it has no watch, no cache and no memory of earlier passes.
// Later tests use it.
func (s *Suite) Restart(t *testing.T, whileDown func()) {
	t.Helper()
	s.stopController()
	select {
	case <-s.Controller.Done:
	case <-time.After(time.Minute):
		t.Fatal("the controller did not stop within a minute")
	}
	whileDown()
	ctx, cancel := context.WithCancel(s.ctx)
	c, err := testenv.StartController(ctx, s.ControllerConfig)
	if err != nil {
		cancel()
		t.Fatalf("start the controller again: %v", err)
	}
	s.Controller, s.stopController = c, cancel
}

// StartWith starts a controller with o's options (StartWith) beside the
// package's, as the controller's ServiceAccount, and stops it when the
// test ends, or when stop is called (which waits until it has stopped:
// the test may then start another of the same shard).
func (s *Suite) StartWith(t testing.TB, o testenv.ControllerOptions) (c *testenv.Controller, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(s.ctx)
	c, err := testenv.StartWith(ctx, s.ControllerConfig, o)
	if err != nil {
		cancel()
		t.Fatalf("start shard %s: %v", o.Shard, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-c.Done:
			case <-time.After(testenv.Timeout):
				t.Errorf("shard %s did not stop within %s", o.Shard, testenv.Timeout)
			}
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// StartShard starts a controller of shard beside the package's unsharded
// one, writing as itself as the package's does, until the test ends.
func (s *Suite) StartShard(t testing.TB, shard string) *testenv.Controller {
	t.Helper()
	c, _ := s.StartWith(t, testenv.ControllerOptions{Shard: shard, WriteAsController: true})
	return c
}
