package rollout

import (
	"context"
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/reconcile/revision"
	reconcilerollout "github.com/stencil-dev/stencil/reconcile/rollout"
)

// rollTo changes the Bundle to files under pol and waits until every
// parent is Ready on the new revision (and a rollout in waves is
// complete), counting the controller's requests, per wave too.
func rollTo(ctx context.Context, h *harness.Harness, w *watcher, from string, files map[string]string, pol *v1alpha1.RolloutPolicy) (table.RolloutRun, error) {
	var run table.RolloutRun
	win, err := h.Begin(ctx, nil)
	if err != nil {
		return run, err
	}
	w.forgetWaves()
	start := time.Now()
	if err := setBundle(ctx, h, files, pol); err != nil {
		return run, err
	}
	to, err := currentHash(ctx, h, from)
	if err != nil {
		return run, err
	}
	// A wave is Ready when the parents it brought are; the watch notes
	// when each wave started (the Bundle's status).
	readyAt := map[int32]time.Duration{}
	name := revision.Name(bundleName, to)
	err = w.until(ctx, 60*time.Minute, "every parent Ready on the new revision", func() bool {
		st := w.state()
		if st.Target == name && st.Wave > 0 && w.readyOn(to) >= int(st.Updated) && st.Updated > 0 {
			if _, ok := readyAt[st.Wave]; !ok && st.WaveReady != nil {
				readyAt[st.Wave] = time.Since(start)
			}
		}
		return w.readyOn(to) == h.Options.N && st.Stable == name && st.Target == ""
	})
	run.Elapsed = time.Since(start)
	if err != nil {
		return run, err
	}
	if run.Requests, err = h.End(ctx, nil, win); err != nil {
		return run, err
	}
	if pol == nil {
		return run, nil
	}
	run.PerWave, err = perWave(h, w, pol, start, start.Add(run.Elapsed), readyAt)
	return run, err
}

// perWave splits a rollout in waves under pol that ran from start to end
// into its waves: each from when the watch saw it start to when the next
// did (the last to end), with the parents the policy gives it, when it was
// Ready (readyAt, from start) and the controller's requests in it.
func perWave(h *harness.Harness, w *watcher, pol *v1alpha1.RolloutPolicy, start, end time.Time, readyAt map[int32]time.Duration) ([]table.Wave, error) {
	starts, at := w.waveStarts()
	var sizes []int
	done := 0
	for _, total := range reconcilerollout.Batches(reconcilerollout.Policy(&v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Rollout: pol}}), h.Options.N) {
		sizes, done = append(sizes, total-done), total
	}
	var waves []table.Wave
	for i, k := range starts {
		from, until := at[k], end
		if i+1 < len(starts) {
			until = at[starts[i+1]]
		}
		counts, err := h.Audit.Count(h.AuditUser, from, until)
		if err != nil {
			return waves, err
		}
		wr := table.Wave{Number: int(k), Elapsed: until.Sub(from), Requests: counts}
		if int(k)-1 < len(sizes) {
			wr.Parents = sizes[k-1]
		}
		if r, ok := readyAt[k]; ok {
			wr.Ready = r - from.Sub(start)
		}
		waves = append(waves, wr)
	}
	return waves, nil
}

// rollFailing rolls out a revision whose pods are never scheduled and
// waits for the rollout to stop.
func rollFailing(ctx context.Context, h *harness.Harness, w *watcher, pol *v1alpha1.RolloutPolicy) (table.FailingRun, error) {
	var run table.FailingRun
	before, err := currentHash(ctx, h, "")
	if err != nil {
		return run, err
	}
	win, err := h.Begin(ctx, nil)
	if err != nil {
		return run, err
	}
	start := time.Now()
	if err := setBundle(ctx, h, files("registry.example/app:4", "bench.stencil.dev/no-such-node: \"true\""), pol); err != nil {
		return run, err
	}
	bad, err := currentHash(ctx, h, before)
	if err != nil {
		return run, err
	}
	err = w.until(ctx, pol.ProgressDeadline.Duration+10*time.Minute, "the rollout of the failing revision to stop", func() bool {
		st := w.state()
		return st.Target == revision.Name(bundleName, bad) && (st.Phase == v1alpha1.RolloutRolledBack || st.Phase == v1alpha1.RolloutHalted)
	})
	run.Elapsed = time.Since(start)
	if err != nil {
		return run, err
	}
	// The parents it moved go back (Rollback): wait for them.
	_ = w.until(ctx, 5*time.Minute, "every parent back on the revision before", func() bool { return w.readyOn(before) == h.Options.N })
	if run.Requests, err = h.End(ctx, nil, win); err != nil {
		return run, err
	}
	st := w.state()
	run.Phase, run.Wave, run.Waves, run.Message = st.Phase, st.Wave, st.Waves, st.Message
	run.Moved = w.everOn(bad)
	run.Afterward = w.readyOn(before)
	return run, nil
}
