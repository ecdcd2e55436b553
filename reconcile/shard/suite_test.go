package shard_test

import (
	"os"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// env is the package's envtest suite: the API server, a cluster admin's
// client and stencil's controller (testenv.Suite).
var env *testenv.Suite

func TestMain(m *testing.M) { os.Exit(testenv.RunSuite(m, &env)) }
