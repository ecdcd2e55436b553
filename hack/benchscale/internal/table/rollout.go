package table

import (
	"fmt"
	"strings"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// write writes the rollout benchmark's tables.
func (r *Rollout) write(out *strings.Builder) {
	fmt.Fprintf(out, "\nRollout of a Bundle change to %d parents in %d namespaces (each a Deployment of one pod on kwok and a ConfigMap)\n\n", r.N, r.Namespaces)
	fmt.Fprintln(out, "| rollout\t| time\t| ÷ all at once\t| requests per parent\t| writes per parent\t| status writes (parents, Bundle, revisions)\t|")
	fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|")
	for _, row := range []struct {
		name string
		run  RolloutRun
	}{{"all at once", r.AllAtOnce}, {fmt.Sprintf("waves of 1, 10, 100, the rest; soak %s", r.Soak), r.Waves}} {
		fmt.Fprintf(out, "| %s\t| %s\t| %s\t| %.1f\t| %.1f\t| %s\t|\n", row.name, dur(row.run.Elapsed), ratio(row.run.Elapsed, r.AllAtOnce.Elapsed),
			perEach(row.run.Requests.Total(), r.N), perEach(row.run.Requests.Writes(), r.N), statusWrites(row.run.Requests))
	}
	for _, row := range []struct {
		name string
		run  RolloutRun
	}{{"all at once", r.AllAtOnce}, {"in waves", r.Waves}} {
		fmt.Fprintf(out, "\nThe controller's requests %s: %s\n", row.name, strings.Join(row.run.Requests.Top(8), ", "))
	}
	if len(r.Waves.PerWave) > 0 {
		fmt.Fprintln(out, "\n| wave\t| parents\t| Ready after\t| wave's time (soak included)\t| requests\t| status writes (parents, Bundle, revisions)\t|")
		fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|")
		for _, wv := range r.Waves.PerWave {
			fmt.Fprintf(out, "| %d\t| %d\t| %s\t| %s\t| %d\t| %s\t|\n", wv.Number, wv.Parents, dur(wv.Ready), dur(wv.Elapsed), wv.Requests.Total(), statusWrites(wv.Requests))
		}
	}
	f := r.Failing
	if f.Phase != "" {
		kept := r.N - f.Moved
		fmt.Fprintf(out, "\nA revision whose pods are never scheduled: %s in wave %d of %d after %s; parents moved to it: %d; never left the revision before: %d (%.1f%%); Ready on it once the rollout stopped: %d; %d requests, status writes (parents, Bundle, revisions) %s\n",
			f.Phase, f.Wave, f.Waves, dur(f.Elapsed), f.Moved, kept, 100*float64(kept)/float64(max(r.N, 1)), f.Afterward, f.Requests.Total(), statusWrites(f.Requests))
		fmt.Fprintf(out, "(%s)\n", f.Message)
	}
}

// statusWrites are the status writes of the parents, the Bundle and its
// revisions: "1012, 9, 14".
func statusWrites(c requests.Counts) string {
	n := func(resource string) int { return c["patch "+resource] + c["update "+resource] }
	return fmt.Sprintf("%d, %d, %d", n("compositions.stencil.dev/status"), n("bundles.stencil.dev/status"), n("bundlerevisions.stencil.dev/status"))
}
