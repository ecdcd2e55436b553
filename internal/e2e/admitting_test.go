package e2e_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// admittingFiles waits until kubectl's server dry run of the objects of
// dir passes admission (testenv.WaitCreatable's check, as kubectl sends
// it): kubectl's discovery must list the published kinds, and the
// binding and parameters of stencil's admission policy for a freshly
// published kind take effect some time after the controller wrote them.
func admittingFiles(t *testing.T, kc kubectl, dir string, timeout time.Duration) {
	t.Helper()
	testenv.Eventually(t, timeout, "kubectl apply --dry-run=server -f "+dir+" to be admitted", paced(func() (bool, error) {
		out, errOut, err := kc.run("", "apply", "--dry-run=server", "-f", dir)
		return err == nil, fmt.Errorf("%v: %s%s", err, out, errOut)
	}))
}

// kubectlPace is how often a wait runs kubectl again: each run is a
// process of its own (a second or so of CPU on a loaded machine), which
// testenv.Eventually's pace would run back to back, on the cores the
// local cluster and the controller under test share.
const kubectlPace = time.Second

// paced returns cond as run at most once every kubectlPace: in between,
// it says again what its last run said, so a wait polling it at its own
// pace runs kubectl no more often.
func paced(cond func() (bool, error)) func() (bool, error) {
	var last time.Time
	var ok bool
	err := errors.New("not run yet")
	return func() (bool, error) {
		if !last.IsZero() && time.Since(last) < kubectlPace {
			return ok, err
		}
		last = time.Now()
		ok, err = cond()
		return ok, err
	}
}
