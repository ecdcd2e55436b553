package table

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
)

// Print writes the tables for a run of o on cpus CPUs. Phases a failed
// run did not reach print as "-".
func (r *Results) Print(w io.Writer, o options.Options, cpus int) {
	var buf bytes.Buffer
	r.write(&buf, o, cpus)
	// tabwriter pads the last cell of a line too.
	for line := range strings.Lines(buf.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

// write writes the tables into out, the buffer Print trims them from.
func (r *Results) write(out *bytes.Buffer, o options.Options, cpus int) {
	var b strings.Builder
	switch {
	case r.Rollout != nil:
		r.Rollout.write(&b)
	case r.Versions != nil:
		r.Versions.write(&b)
	}
	if b.Len() > 0 {
		fmt.Fprintf(out, "stencil %s on %d CPUs; requests counted by %s\n", r.Version, cpus, r.CountedBy)
		tw := tabwriter.NewWriter(out, 0, 0, 1, ' ', 0)
		fmt.Fprint(tw, b.String())
		flush(tw)
		return
	}
	r.writeScale(out, o, cpus)
}
