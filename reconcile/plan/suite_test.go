package plan_test

import (
	"context"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/cluster"
)

var (
	// env is the package's API server (no controller: planning reads
	// the cluster, it never writes).
	env *testenv.Env
	// k is a cluster admin's client, not cached.
	k client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, func(_ context.Context, e *testenv.Env) (err error) {
		k, err = client.New(e.Config, client.Options{})
		return err
	}))
}

// liveAPIs is what the controller and the CLI's online session plan
// with: cluster.NewAPIs over a discovery-backed RESTMapper and a reader
// of the API server. A fresh mapper per call sees the kinds served now.
func liveAPIs(t *testing.T) *cluster.APIs {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	return cluster.NewAPIs(mapper, k)
}
