package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// pass is one measured stretch of the controller's work.
type pass struct {
	elapsed  time.Duration
	requests requestCounts
	// cpu and workersCPU are the CPU time the controller and its render
	// workers used over the stretch (measured for the cold converge).
	cpu, workersCPU time.Duration
	// plane is the CPU time the control plane used over the stretch
	// (measured for the cold converge, on the local cluster).
	plane planeCPU
	// passes and applies count the controller's passes by outcome and its
	// applies by result over the stretch (stencil_reconcile_passes_total,
	// stencil_applies_total; measured for the cold converge).
	passes, applies map[string]float64
}

// results are what a run measured.
type results struct {
	// version is what the controller's binary says of itself.
	version   string
	countedBy string
	floor     floorResult
	// parents is the floor with parents (see parentFloor), and
	// parentsWebhooks the controller's CPU over it: its webhooks'.
	parents                         floorResult
	parentsWebhooks                 pass
	cold, noop, noopAfter, restart  pass
	memBefore, memAfter, memRestart memory
	latencies                       []time.Duration
	// outputs are the samples of the outputs latency; outputsPass what
	// the controller spent over them (requests, CPU).
	outputs     []time.Duration
	outputsPass pass
	// costs are the parent-cost rows (see parentCost).
	costs []costResult
	// unselected counts the controller's lists and watches of ConfigMaps
	// and Secrets without a label selector, nil when not counted.
	unselected *int
	// rollout is what the rollout benchmark measured (-rollout), which
	// runs instead of the others.
	rollout *rolloutResult
}

// ratio is a ÷ b as "2.15×", or "-" when either is unknown.
func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a.Seconds()/b.Seconds())
}

// perMs is d shared among n, in milliseconds.
func perMs(d time.Duration, n int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(max(n, 1))
}

// print writes the tables. Phases a failed run did not reach print as "-".
func (r *results) print(w io.Writer, o options, cpus int) {
	var buf bytes.Buffer
	r.write(&buf, o, cpus)
	// tabwriter pads the last cell of a line too.
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func (r *results) write(out io.Writer, o options, cpus int) {
	if r.rollout != nil {
		var b strings.Builder
		r.rollout.write(&b)
		fmt.Fprintf(out, "stencil %s on %d CPUs; requests counted by %s\n", r.version, cpus, r.countedBy)
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
		fmt.Fprint(tw, b.String())
		tw.Flush()
		return
	}
	name := "stencil"
	if r.version != "" {
		name += " " + r.version
	}
	fmt.Fprintf(out, "\n%s at scale: %d Compositions × %d children, --concurrency %d, --apply-concurrency %d, --kube-api-qps %g, --kube-api-burst %d; %d CPUs\n",
		name, o.n, o.children, o.concurrency, o.applyConcurrency, o.qps, o.burst, cpus)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(out, "\nCold converge (all Ready)")
	fmt.Fprintln(tw, "\ttime\tobjects/s\trequests\tper Composition\t")
	fmt.Fprintf(tw, "floor: bare server-side apply\t%s\t%s\t%d\t%.1f\t\n", dur(r.floor.elapsed), rate(r.floor.objects, r.floor.elapsed),
		r.floor.requests.reads()+r.floor.requests.writes(), perEach(r.floor.requests.reads()+r.floor.requests.writes(), o.n))
	fmt.Fprintf(tw, "floor with parents\t%s\t%s\t%d\t%.1f\t\n", dur(r.parents.elapsed), rate(r.parents.objects, r.parents.elapsed),
		r.parents.requests.reads()+r.parents.requests.writes(), perEach(r.parents.requests.reads()+r.parents.requests.writes(), o.n))
	fmt.Fprintf(tw, "stencil controller\t%s\t%s\t%d\t%.1f\t\n", dur(r.cold.elapsed), rate(o.n*o.children, r.cold.elapsed),
		r.cold.requests.reads()+r.cold.requests.writes(), perEach(r.cold.requests.reads()+r.cold.requests.writes(), o.n))
	fmt.Fprintf(tw, "ratio\t%s\t\t\t\t\n", ratio(r.cold.elapsed, r.floor.elapsed))
	fmt.Fprintf(tw, "ratio to floor with parents\t%s\t\t\t\t\n", ratio(r.cold.elapsed, r.parents.elapsed))
	fmt.Fprintf(tw, "floor with parents ÷ floor\t%s\t\t\t\t\n", ratio(r.parents.elapsed, r.floor.elapsed))
	tw.Flush()
	if r.parentsWebhooks.cpu > 0 {
		fmt.Fprintf(out, "CPU used over the floor with parents: controller (its admission webhooks) %s (%.1f ms per Composition), render workers %s\n",
			r.parentsWebhooks.cpu.Round(10*time.Millisecond), float64(r.parentsWebhooks.cpu.Milliseconds())/float64(o.n), r.parentsWebhooks.workersCPU.Round(10*time.Millisecond))
	}
	if r.cold.cpu > 0 {
		fmt.Fprintf(out, "CPU used over the cold converge: controller %s (%.1f ms per Composition), render workers %s\n",
			r.cold.cpu.Round(10*time.Millisecond), float64(r.cold.cpu.Milliseconds())/float64(o.n), r.cold.workersCPU.Round(10*time.Millisecond))
	}
	if len(r.cold.passes) > 0 {
		fmt.Fprintf(out, "Per Composition over the cold converge: passes %s; applies %s\n",
			perKey(r.cold.passes, o.n), perKey(r.cold.applies, o.n))
	}
	if r.floor.plane != nil && r.cold.plane != nil {
		fmt.Fprintf(out, "CPU used by the control plane: floor: %s; floor with parents: %s; cold converge: %s\n",
			r.floor.plane.perEach(o.n, "set"), r.parents.plane.perEach(o.n, "set"), r.cold.plane.perEach(o.n, "Composition"))
	}
	if r.parents.plane != nil && r.cold.plane != nil {
		// Steadier than wall-clock time on a shared machine: the CPU
		// the phases cost, the harness's own aside.
		parents := r.parents.plane.total() + r.parentsWebhooks.cpu + r.parentsWebhooks.workersCPU
		cold := r.cold.plane.total() + r.cold.cpu + r.cold.workersCPU
		fmt.Fprintf(out, "CPU per Composition, control plane, controller and render workers: floor with parents %.1f ms, cold converge %.1f ms (%s)\n",
			perMs(parents, o.n), perMs(cold, o.n), ratio(cold, parents))
	}

	fmt.Fprintf(out, "\nAPI requests of the controller, counted from %s\n", r.countedBy)
	fmt.Fprintln(tw, "\ttime\treads\twrites\treads/Composition\twrites/Composition\t")
	for _, p := range []struct {
		name string
		p    pass
		n    int
	}{
		{"cold converge", r.cold, o.n},
		{"no-op pass (Bundle annotated)", r.noop, o.n},
		{"no-op pass, unrelated objects present", r.noopAfter, o.n},
		{"restart, all Ready", r.restart, o.n},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t\n", p.name, dur(p.p.elapsed), p.p.requests.reads(), p.p.requests.writes(),
			perEach(p.p.requests.reads(), p.n), perEach(p.p.requests.writes(), p.n))
	}
	tw.Flush()
	for _, p := range []struct {
		name string
		p    pass
	}{{"cold converge", r.cold}, {"no-op pass", r.noop}, {"restart", r.restart}} {
		if top := p.p.requests.top(16); len(top) > 0 {
			fmt.Fprintf(out, "  %s: %s\n", p.name, strings.Join(top, ", "))
		}
	}

	fmt.Fprintln(out, "\nMemory: the controller process, and its render workers (the sandbox's processes, summed;")
	fmt.Fprintln(out, "each one's VmHWM counts the pages of the binary they share; Pss, now, shares them out)")
	fmt.Fprintln(out, "anon and file: the controller's largest sampled resident set, split into anonymous and file-backed pages)")
	fmt.Fprintln(tw, "\tVmHWM\tanon\tfile\tVmRSS\tworkers\tworkers' VmHWM\ttotal VmHWM\ttotal Pss\t")
	for _, m := range []struct {
		name string
		m    memory
	}{
		{fmt.Sprintf("with %d×%d members", o.n, o.children), r.memBefore},
		{fmt.Sprintf("+ %d ConfigMaps, %d Secrets unrelated", o.unrelatedConfigMaps, o.unrelatedSecrets), r.memAfter},
		{"after a restart, all Ready", r.memRestart},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", m.name, mib(m.m.peak), mib(m.m.peakAnon), mib(m.m.peakFile), mib(m.m.current), m.m.workers, mib(m.m.workersPeak), mib(m.m.peak+m.m.workersPeak), mib(m.m.pss))
	}
	fmt.Fprintf(tw, "growth with the unrelated objects\t%s\t\t\t%s\t\t\t\t\t\n", growth(r.memBefore.peak, r.memAfter.peak), growth(r.memBefore.current, r.memAfter.current))
	tw.Flush()

	if r.unselected != nil {
		fmt.Fprintf(out, "Lists and watches of ConfigMaps or Secrets without a label selector, by the controller, whole run: %d\n", *r.unselected)
	}

	fmt.Fprintf(out, "\nChild → parent status latency (Deployment Current → Composition Ready), %d samples\n", len(r.latencies))
	fmt.Fprintln(tw, "p50\tp95\tmax\t")
	fmt.Fprintf(tw, "%s\t%s\t%s\t\n", ms(percentile(r.latencies, 50), len(r.latencies)), ms(percentile(r.latencies, 95), len(r.latencies)),
		ms(percentile(r.latencies, 100), len(r.latencies)))
	tw.Flush()

	fmt.Fprintf(out, "\nChild → parent output latency (a member's field changed → the parent's status.outputs with it), %d samples\n", len(r.outputs))
	fmt.Fprintln(tw, "p50\tp95\tmax\trequests per sample\tcontroller CPU per sample\t")
	n := max(len(r.outputs), 1)
	fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%s\t\n", ms(percentile(r.outputs, 50), len(r.outputs)), ms(percentile(r.outputs, 95), len(r.outputs)),
		ms(percentile(r.outputs, 100), len(r.outputs)), float64(r.outputsPass.requests.reads()+r.outputsPass.requests.writes())/float64(n),
		(r.outputsPass.cpu / time.Duration(n)).Round(10*time.Microsecond))
	tw.Flush()
	if top := r.outputsPass.requests.top(6); len(top) > 0 {
		fmt.Fprintf(out, "  requests over the samples: %s\n", strings.Join(top, ", "))
	}

	if len(r.costs) > 0 {
		fmt.Fprintf(out, "\nWhat a write costs the control plane, %d writes of each\n", o.n)
		for _, c := range r.costs {
			fmt.Fprintf(out, "%s (%d bytes): %s\n", c.what, c.bytes, c.plane.perEach(o.n, "write"))
		}
	}
	fmt.Fprintf(out, "\nRestart: controller start → every Composition reported Ready again (%d existing): %s\n\n", o.n, dur(r.restart.elapsed))
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Millisecond).String()
}

func ms(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

func rate(objects int, d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(objects)/d.Seconds())
}

func mib(kib int) string {
	if kib == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}

func growth(before, after int) string {
	if before == 0 || after == 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(after-before)/float64(before))
}

// perKey writes counts divided by n, by key in order: "full 1.00, unchanged 0.50".
func perKey(counts map[string]float64, n int) string {
	if len(counts) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, counts[k]/float64(n))
	}
	return strings.Join(parts, ", ")
}
