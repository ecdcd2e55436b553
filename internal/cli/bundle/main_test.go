package bundle_test

import (
	"os"
	"testing"

	"github.com/stencil-dev/stencil/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the render pool re-executes this test binary as its workers
	os.Exit(m.Run())
}
