package conversion_test

import (
	"os"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv/suite"
)

// env is the package's envtest suite: the API server, a cluster admin's
// client and stencil's controller serving its webhooks, the conversion
// webhook among them (suite.RunServing).
var env *suite.Suite

func TestMain(m *testing.M) { os.Exit(suite.RunServing(m, &env, "stencil-conversion-test")) }
