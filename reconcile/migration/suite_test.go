package migration_test

import (
	"os"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// env is the package's envtest suite: the API server, a cluster admin's
// client and stencil's controller, whose storage migration runs for the
// Bundles that publish a kind (suite.Suite).
var env *suite.Suite

func TestMain(m *testing.M) { os.Exit(suite.Run(m, &env)) }
