package harness

import (
	"context"
	"fmt"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/profile"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
)

// StartAPIServerProfile starts recording kube-apiserver's CPU profile when
// -apiserver-cpu-profile asks for it (nil otherwise).
func (h *Harness) StartAPIServerProfile(ctx context.Context) (*profile.Profiler, error) {
	if h.Options.APIServerProfile == "" {
		return nil, nil
	}
	fetch, err := profile.APIServer(h.AdminRC)
	if err != nil {
		return nil, err
	}
	return profile.Start(ctx, fetch)
}

// Profiles are the CPU profiles recorded over one phase with the
// controller running: its own (-cpu-profile) and kube-apiserver's
// (-apiserver-cpu-profile), each nil when not asked for.
type Profiles struct{ controller, apiServer *profile.Profiler }

// StartProfiles starts the CPU profiles the flags ask for.
func (h *Harness) StartProfiles(ctx context.Context) (Profiles, error) {
	var pp Profiles
	var err error
	if h.Options.CPUProfile != "" {
		if pp.controller, err = profile.Start(ctx, profile.Controller(h.Ctrl.PProf)); err != nil {
			return pp, err
		}
	}
	pp.apiServer, err = h.StartAPIServerProfile(ctx)
	return pp, err
}

// StopProfiles writes pp to the flags' files with suffix, for the phase
// what.
func (h *Harness) StopProfiles(ctx context.Context, pp Profiles, what, suffix string) error {
	for _, p := range []struct {
		prof       *profile.Profiler
		file, name string
	}{{pp.controller, h.Options.CPUProfile + suffix, "the controller's"}, {pp.apiServer, h.Options.APIServerProfile + suffix, "kube-apiserver's"}} {
		if p.prof == nil {
			continue
		}
		if err := p.prof.Stop(ctx, p.file); err != nil {
			return fmt.Errorf("%s CPU profile: %w", p.name, err)
		}
		progress.Logf("%s CPU profile of %s written to %s", p.name, what, p.file)
	}
	return nil
}
