package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// TestReportIsolation: stencil_render_isolation says which protections
// confine the workers, one gauge per protection.
func TestReportIsolation(t *testing.T) {
	for _, tt := range []struct {
		name              string
		iso               sandbox.Isolation
		landlock, seccomp float64
	}{
		{"both", sandbox.Isolation{Landlock: 7, Seccomp: true}, 1, 1},
		{"no Landlock", sandbox.Isolation{NoLandlock: "not offered", Seccomp: true}, 0, 1},
		{"neither", sandbox.Isolation{NoLandlock: "x", NoSeccomp: "y"}, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reportIsolation(tt.iso)
			if got := testutil.ToFloat64(metrics.RenderIsolation.WithLabelValues("landlock")); got != tt.landlock {
				t.Errorf("landlock = %v, want %v", got, tt.landlock)
			}
			if got := testutil.ToFloat64(metrics.RenderIsolation.WithLabelValues("seccomp")); got != tt.seccomp {
				t.Errorf("seccomp = %v, want %v", got, tt.seccomp)
			}
		})
	}
}
