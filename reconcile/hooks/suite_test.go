package hooks_test

import (
	"os"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// env is the package's envtest suite: the API server, a cluster admin's
// client and stencil's controller (suite.Suite).
var env *suite.Suite

func TestMain(m *testing.M) { os.Exit(suite.Run(m, &env)) }
