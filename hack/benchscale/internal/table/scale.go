package table

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
)

// writeScale writes the scale benchmark's tables, one section after the
// other.
func (r *Results) writeScale(out *bytes.Buffer, o options.Options, cpus int) {
	name := "stencil"
	if r.Version != "" {
		name += " " + r.Version
	}
	fmt.Fprintf(out, "\n%s at scale: %d Compositions × %d children, --concurrency %d, --apply-concurrency %d, --kube-api-qps %g, --kube-api-burst %d; %d CPUs\n",
		name, o.N, o.Children, o.Concurrency, o.ApplyConcurrency, o.QPS, o.Burst, cpus)
	r.writeCold(out, o)
	r.writeRequests(out, o)
	r.writeMemory(out, o)
	r.writeLatencies(out)
	if len(r.Costs) > 0 {
		fmt.Fprintf(out, "\nWhat a write costs the control plane, %d writes of each\n", o.N)
		for _, c := range r.Costs {
			fmt.Fprintf(out, "%s (%d bytes): %s\n", c.What, c.Bytes, c.Plane.PerEach(o.N, "write"))
		}
	}
	fmt.Fprintf(out, "\nRestart: controller start → every Composition reported Ready again (%d existing): %s\n\n", o.N, dur(r.Restart.Elapsed))
}

// newTable is a tabwriter over out, the buffer Print builds its tables
// in, aligned as every scale table is.
func newTable(out *bytes.Buffer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
}

// flush writes the table tw holds to its buffer. A bytes.Buffer's writes
// never fail, and the only errors Flush returns are its writer's.
func flush(tw *tabwriter.Writer) {
	_ = tw.Flush() // into a bytes.Buffer: always nil
}

// writeCold writes the cold converge's table, the floors beside it, and
// the CPU the cold converge and the floor with parents cost.
func (r *Results) writeCold(out *bytes.Buffer, o options.Options) {
	tw := newTable(out)
	fmt.Fprintln(out, "\nCold converge (all Ready)")
	fmt.Fprintln(tw, "\ttime\tobjects/s\trequests\tper Composition\t")
	fmt.Fprintf(tw, "floor: bare server-side apply\t%s\t%s\t%d\t%.1f\t\n", dur(r.Floor.Elapsed), rate(r.Floor.Objects, r.Floor.Elapsed),
		r.Floor.Requests.Total(), perEach(r.Floor.Requests.Total(), o.N))
	fmt.Fprintf(tw, "floor with parents\t%s\t%s\t%d\t%.1f\t\n", dur(r.Parents.Elapsed), rate(r.Parents.Objects, r.Parents.Elapsed),
		r.Parents.Requests.Total(), perEach(r.Parents.Requests.Total(), o.N))
	fmt.Fprintf(tw, "stencil controller\t%s\t%s\t%d\t%.1f\t\n", dur(r.Cold.Elapsed), rate(o.N*o.Children, r.Cold.Elapsed),
		r.Cold.Requests.Total(), perEach(r.Cold.Requests.Total(), o.N))
	fmt.Fprintf(tw, "ratio\t%s\t\t\t\t\n", ratio(r.Cold.Elapsed, r.Floor.Elapsed))
	fmt.Fprintf(tw, "ratio to floor with parents\t%s\t\t\t\t\n", ratio(r.Cold.Elapsed, r.Parents.Elapsed))
	fmt.Fprintf(tw, "floor with parents ÷ floor\t%s\t\t\t\t\n", ratio(r.Parents.Elapsed, r.Floor.Elapsed))
	flush(tw)
	if r.ParentsWebhooks.CPU > 0 {
		fmt.Fprintf(out, "CPU used over the floor with parents: controller (its admission webhooks) %s (%.1f ms per Composition), render workers %s\n",
			r.ParentsWebhooks.CPU.Round(10*time.Millisecond), float64(r.ParentsWebhooks.CPU.Milliseconds())/float64(o.N), r.ParentsWebhooks.WorkersCPU.Round(10*time.Millisecond))
	}
	if r.Cold.CPU > 0 {
		fmt.Fprintf(out, "CPU used over the cold converge: controller %s (%.1f ms per Composition), render workers %s\n",
			r.Cold.CPU.Round(10*time.Millisecond), float64(r.Cold.CPU.Milliseconds())/float64(o.N), r.Cold.WorkersCPU.Round(10*time.Millisecond))
	}
	if len(r.Cold.Passes) > 0 {
		fmt.Fprintf(out, "Per Composition over the cold converge: passes %s; applies %s\n",
			perKey(r.Cold.Passes, o.N), perKey(r.Cold.Applies, o.N))
	}
	if r.Floor.Plane != nil && r.Cold.Plane != nil {
		fmt.Fprintf(out, "CPU used by the control plane: floor: %s; floor with parents: %s; cold converge: %s\n",
			r.Floor.Plane.PerEach(o.N, "set"), r.Parents.Plane.PerEach(o.N, "set"), r.Cold.Plane.PerEach(o.N, "Composition"))
	}
	if r.Parents.Plane != nil && r.Cold.Plane != nil {
		// Steadier than wall-clock time on a shared machine: the CPU
		// the phases cost, the harness's own aside.
		parents := r.Parents.Plane.Total() + r.ParentsWebhooks.CPU + r.ParentsWebhooks.WorkersCPU
		cold := r.Cold.Plane.Total() + r.Cold.CPU + r.Cold.WorkersCPU
		fmt.Fprintf(out, "CPU per Composition, control plane, controller and render workers: floor with parents %.1f ms, cold converge %.1f ms (%s)\n",
			perMs(parents, o.N), perMs(cold, o.N), ratio(cold, parents))
	}
}

// writeRequests writes the controller's API requests over each pass, and
// the most frequent of them.
func (r *Results) writeRequests(out *bytes.Buffer, o options.Options) {
	tw := newTable(out)
	fmt.Fprintf(out, "\nAPI requests of the controller, counted from %s\n", r.CountedBy)
	fmt.Fprintln(tw, "\ttime\treads\twrites\treads/Composition\twrites/Composition\t")
	for _, p := range []struct {
		name string
		p    Pass
		n    int
	}{
		{"cold converge", r.Cold, o.N},
		{"no-op pass (Bundle annotated)", r.Noop, o.N},
		{"no-op pass, unrelated objects present", r.NoopAfter, o.N},
		{"restart, all Ready", r.Restart, o.N},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%.2f\t\n", p.name, dur(p.p.Elapsed), p.p.Requests.Reads(), p.p.Requests.Writes(),
			perEach(p.p.Requests.Reads(), p.n), perEach(p.p.Requests.Writes(), p.n))
	}
	flush(tw)
	for _, p := range []struct {
		name string
		p    Pass
	}{{"cold converge", r.Cold}, {"no-op pass", r.Noop}, {"restart", r.Restart}} {
		if top := p.p.Requests.Top(16); len(top) > 0 {
			fmt.Fprintf(out, "  %s: %s\n", p.name, strings.Join(top, ", "))
		}
	}
}

// writeMemory writes the memory the controller and its render workers
// held before and after the unrelated objects and after a restart.
func (r *Results) writeMemory(out *bytes.Buffer, o options.Options) {
	tw := newTable(out)
	fmt.Fprintln(out, "\nMemory: the controller process, and its render workers (the sandbox's processes, summed;")
	fmt.Fprintln(out, "each one's VmHWM counts the pages of the binary they share; Pss, now, shares them out)")
	fmt.Fprintln(out, "anon and file: the controller's largest sampled resident set, split into anonymous and file-backed pages)")
	fmt.Fprintln(tw, "\tVmHWM\tanon\tfile\tVmRSS\tworkers\tworkers' VmHWM\ttotal VmHWM\ttotal Pss\t")
	for _, m := range []struct {
		name string
		m    controller.Memory
	}{
		{fmt.Sprintf("with %d×%d members", o.N, o.Children), r.MemBefore},
		{fmt.Sprintf("+ %d ConfigMaps, %d Secrets unrelated", o.UnrelatedConfigMaps, o.UnrelatedSecrets), r.MemAfter},
		{"after a restart, all Ready", r.MemRestart},
	} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t\n", m.name, mib(m.m.Peak), mib(m.m.PeakAnon), mib(m.m.PeakFile), mib(m.m.Current), m.m.Workers, mib(m.m.WorkersPeak), mib(m.m.Peak+m.m.WorkersPeak), mib(m.m.Pss))
	}
	fmt.Fprintf(tw, "growth with the unrelated objects\t%s\t\t\t%s\t\t\t\t\t\n", growth(r.MemBefore.Peak, r.MemAfter.Peak), growth(r.MemBefore.Current, r.MemAfter.Current))
	flush(tw)

	if r.Unselected != nil {
		fmt.Fprintf(out, "Lists and watches of ConfigMaps or Secrets without a label selector, by the controller, whole run: %d\n", *r.Unselected)
	}
}

// writeLatencies writes the status and output latencies' percentiles.
func (r *Results) writeLatencies(out *bytes.Buffer) {
	tw := newTable(out)
	fmt.Fprintf(out, "\nChild → parent status latency (Deployment Current → Composition Ready), %d samples\n", len(r.Latencies))
	fmt.Fprintln(tw, "p50\tp95\tmax\t")
	fmt.Fprintf(tw, "%s\t%s\t%s\t\n", ms(percentile(r.Latencies, 50), len(r.Latencies)), ms(percentile(r.Latencies, 95), len(r.Latencies)),
		ms(percentile(r.Latencies, 100), len(r.Latencies)))
	flush(tw)

	fmt.Fprintf(out, "\nChild → parent output latency (a member's field changed → the parent's status.outputs with it), %d samples\n", len(r.Outputs))
	fmt.Fprintln(tw, "p50\tp95\tmax\trequests per sample\tcontroller CPU per sample\t")
	n := max(len(r.Outputs), 1)
	fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%s\t\n", ms(percentile(r.Outputs, 50), len(r.Outputs)), ms(percentile(r.Outputs, 95), len(r.Outputs)),
		ms(percentile(r.Outputs, 100), len(r.Outputs)), float64(r.OutputsPass.Requests.Total())/float64(n),
		(r.OutputsPass.CPU / time.Duration(n)).Round(10*time.Microsecond))
	flush(tw)
	if top := r.OutputsPass.Requests.Top(6); len(top) > 0 {
		fmt.Fprintf(out, "  requests over the samples: %s\n", strings.Join(top, ", "))
	}
}
