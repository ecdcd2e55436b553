package cli_test

import (
	"strings"
	"testing"
)

// TestControllerIdentityFlags: writing as the controller itself is an
// explicit choice that cannot be mixed with another default
// ServiceAccount, and no default ServiceAccount at all is refused: the
// controller never falls back to writing as itself. Both stop it before
// it starts, naming the flags.
func TestControllerIdentityFlags(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  []string
	}{
		{[]string{"--write-as-controller", "--default-service-account=deployer"}, []string{"--write-as-controller", "--default-service-account", "exclusive"}},
		{[]string{"--default-service-account="}, []string{"--default-service-account", "--write-as-controller"}},
	} {
		args := append([]string{"controller"}, tc.flags...)
		_, errOut, code := stencil(t, "", append(args, "--metrics-bind-address=0", "--health-probe-bind-address=0")...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errOut, w) {
				t.Errorf("controller %v: exit %d, stderr %q; want an error naming %s", tc.flags, code, errOut, w)
			}
		}
	}
}

// TestControllerIdentityHelp: the flags say what they do.
func TestControllerIdentityHelp(t *testing.T) {
	out, _, code := stencil(t, "", "controller", "--help")
	if code != 0 {
		t.Fatalf("controller --help: exit %d", code)
	}
	for _, w := range []string{`--default-service-account string`, `(default "stencil")`, "--write-as-controller", "Exclusive with"} {
		if !strings.Contains(out, w) {
			t.Errorf("controller --help lacks %q:\n%s", w, out)
		}
	}
}
