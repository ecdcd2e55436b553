package cli_test

import (
	"strings"
	"testing"
)

// TestControllerRefusesBadWebhookFlags: a webhook flag the controller
// cannot serve with stops it before it starts, naming the flag.
func TestControllerRefusesBadWebhookFlags(t *testing.T) {
	for _, tc := range []struct{ flag, want string }{
		{"--webhook-certs=cert-manager", "--webhook-certs"},
		{"--webhook-port=70000", "--webhook-port"},
		{"--webhook-timeout=0s", "--webhook-timeout"},
		{"--webhook-timeout=1m", "--webhook-timeout"},
		{"--webhook-host=127.0.0.1", "--webhook-host"},
		{"--webhook-service=Stencil_Webhook", "--webhook-service"},
		{"--webhook-config=", "--webhook-config"},
		{"--webhook-cert-secret=", "--webhook-cert-secret"},
	} {
		_, errOut, code := stencil(t, "", "controller", tc.flag, "--metrics-bind-address=0", "--health-probe-bind-address=0")
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("controller %s: exit %d, stderr %q; want an error naming %s", tc.flag, code, errOut, tc.want)
		}
	}
}
