package options

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestRegister: the flags `make bench-scale` and `make bench-rollout`
// pass set the fields they name; the rest keep their defaults.
func TestRegister(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("benchscale", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse(strings.Fields("-n 20 -children 2 -samples 3 -rollout-soak 5s")); err != nil {
		t.Fatal(err)
	}
	if o.N != 20 || o.Children != 2 || o.Samples != 3 || o.RolloutSoak != 5*time.Second {
		t.Errorf("set: %+v", o)
	}
	if o.Concurrency != 4 || o.ApplyConcurrency != 8 || o.QPS != -1 || o.Burst != 0 || o.Stencil != "bin/stencil" || !o.Webhook ||
		o.UnrelatedConfigMaps != 20000 || o.UnrelatedSecrets != 5000 || o.RolloutNamespaces != 100 || o.RolloutDeadline != time.Minute || o.Versions {
		t.Errorf("defaults: %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no Compositions", Options{N: 0, Children: 1, Samples: 1}, "-n, -children and -samples must be at least 1"},
		{"an audit log without its user", Options{N: 1, Children: 1, Samples: 1, AuditLog: "audit.log"}, "-audit-log and -audit-user go together"},
		{"two benchmarks at once", Options{N: 1, Children: 1, Samples: 1, Webhook: true, Versions: true, Rollout: true}, "-versions and -rollout are two benchmarks: choose one"},
		{"versions without the webhook server", Options{N: 1, Children: 1, Samples: 1, Versions: true}, "-versions needs -webhook: the API server converts v1 through the controller's webhook server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Validate(); err == nil || err.Error() != tc.want {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}
