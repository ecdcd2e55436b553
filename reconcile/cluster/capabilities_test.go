package cluster

import (
	"context"
	"errors"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// TestCapabilitiesCache: renders share one discovery; a refresh reports a
// change only when what is served changed (not its order); a failed
// discovery keeps the last capabilities; partial ones are kept.
func TestCapabilitiesCache(t *testing.T) {
	calls := 0
	served := []string{"v1", "v1/ConfigMap", "apps/v1", "apps/v1/Deployment"}
	var fail, partial error
	c := newCapabilitiesCache(nil, nil)
	c.discover = func(context.Context) (*templates.Capabilities, error) {
		calls++
		if fail != nil {
			return nil, fail
		}
		return normalizeCapabilities(&templates.Capabilities{
			KubeVersion: templates.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"},
			APIVersions: append(templates.VersionSet(nil), served...),
		}), partial
	}
	ctx := context.Background()
	first, err := c.Get(ctx)
	if err != nil || !first.Caps.APIVersions.Has("apps/v1/Deployment") {
		t.Fatalf("get: %v, %+v", err, first)
	}
	if again, _ := c.Get(ctx); again != first || calls != 1 {
		t.Errorf("a second get discovered again (%d calls)", calls)
	}

	served = []string{"apps/v1/Deployment", "apps/v1", "v1/ConfigMap", "v1"}
	if s, changed, err := c.refresh(ctx); err != nil || changed || s.Revision != first.Revision {
		t.Errorf("the same APIs in another order: changed %t, revision %s → %s (err %v)", changed, first.Revision, s.Revision, err)
	}
	served = append(served, "example.com/v1", "example.com/v1/Widget")
	partial = errors.New("example.com/v1: the server is currently unable to handle the request")
	second, changed, err := c.refresh(ctx)
	if err != nil || !changed || second.Revision == first.Revision || !second.Caps.APIVersions.Has("example.com/v1/Widget") {
		t.Errorf("a new kind, partially discovered: changed %t, err %v, caps %v", changed, err, second.Caps.APIVersions)
	}
	fail = errors.New("connection refused")
	if _, _, err := c.refresh(ctx); err == nil {
		t.Error("a failed discovery reported no error")
	}
	if got, _ := c.Get(ctx); got != second {
		t.Error("a failed discovery dropped the last capabilities")
	}

	c.markStale()
	c.markStale() // coalesced: one refresh for a burst
	if len(c.stale) != 1 {
		t.Errorf("%d stale tokens, want 1", len(c.stale))
	}
}
