package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	formatTable = ""
	formatWide  = "wide"
	formatYAML  = "yaml"
	formatJSON  = "json"
)

// maxReason is how much of a reason the table shows (wide: all of it).
const maxReason = 60

var humanDuration = duration.HumanDuration

// Print writes t in format (formatTable, formatWide, formatYAML,
// formatJSON), with ages as of now.
func Print(w io.Writer, t *Trace, format string, now time.Time) error {
	switch format {
	case formatYAML:
		out, err := yaml.Marshal(t)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case formatJSON:
		out, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", out)
		return err
	case formatTable, formatWide:
		return printTable(w, t, format == formatWide, now)
	}
	return fmt.Errorf("unknown output format %q: want wide, yaml or json", format)
}

func printTable(w io.Writer, t *Trace, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "NAME\tAPIVERSION\tREADY\tSTATUS\tREASON\tAGE")
	} else {
		fmt.Fprintln(tw, "NAME\tREADY\tSTATUS\tREASON\tAGE")
	}
	var row func(n Node, prefix, branch string)
	row = func(n Node, prefix, branch string) {
		status, reason := n.Status, n.Reason
		if n.Access != "" {
			status, reason = n.Access, accessReason(n)
		}
		if !wide && len(reason) > maxReason {
			reason = reason[:maxReason-1] + "…"
		}
		name := prefix + branch + display(n, t.Parent.Namespace, n.Kind == t.Parent.Kind && n.Name == t.Parent.Name && n.UID == t.Parent.UID)
		if wide {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, n.APIVersion, n.Ready, dash(status), dash(reason), ageOf(n, now))
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, n.Ready, dash(status), dash(reason), ageOf(n, now))
		}
		next := prefix
		switch branch {
		case "├─ ":
			next += "│  "
		case "└─ ":
			next += "   "
		}
		for i, c := range n.Children {
			b := "├─ "
			if i == len(n.Children)-1 {
				b = "└─ "
			}
			row(c, next, b)
		}
	}
	row(t.Parent, "", "")
	if err := tw.Flush(); err != nil {
		return err
	}
	return printFooter(w, t, wide)
}

// printFooter writes what the parent's status says it is in: its Bundle
// revision and rollout, conditions other than Ready, hooks run.
func printFooter(w io.Writer, t *Trace, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintln(tw)
	if t.Bundle != "" || t.BundleRevision != "" {
		revision := t.BundleRevision
		if !wide && len(revision) > len("sha256:")+12 {
			revision = revision[:len("sha256:")+12]
		}
		fmt.Fprintf(tw, "Bundle:\t%s, revision %s (generation %d, observed %d)\n", dash(t.Bundle), dash(revision), t.Generation, t.ObservedGeneration)
	}
	if r := t.Rollout; r != nil {
		line := dash(string(r.Phase))
		if r.Waves > 0 {
			line += fmt.Sprintf(", wave %d/%d", r.Wave, r.Waves)
		}
		if r.Summary != "" {
			line += " (" + r.Summary + ")"
		}
		fmt.Fprintf(tw, "Rollout:\t%s\n", line)
	}
	if wide && t.Parent.Message != "" {
		fmt.Fprintf(tw, "Ready:\t%s: %s\n", t.Parent.Reason, t.Parent.Message)
	}
	for _, c := range t.Conditions {
		fmt.Fprintf(tw, "%s:\t%s %s: %s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	printLookups(tw, t, wide)
	if t.Hooks != nil {
		for _, h := range t.Hooks.Completed {
			fmt.Fprintf(tw, "Hook:\t%s %s/%s %s (%s of revision %s)\n", h.Hook, h.Kind, h.Name, h.Result, t.Hooks.Event, t.Hooks.Revision)
		}
	}
	return tw.Flush()
}

// shortLookups is how many lookups the table lists unless wide.
const shortLookups = 10

// printLookups writes a line per lookup the last render made: what it
// found, the object or list, and why a Denied one was.
func printLookups(w io.Writer, t *Trace, wide bool) {
	shown := t.Lookups
	if !wide && len(shown) > shortLookups {
		shown = shown[:shortLookups]
	}
	for _, l := range shown {
		what := l.Name
		switch {
		case l.Name == "" && l.Namespace == "":
			what = "(list)"
		case l.Name == "":
			what = l.Namespace + "/(list)"
		case l.Namespace != "":
			what = l.Namespace + "/" + l.Name
		}
		line := fmt.Sprintf("%s %s %s", l.Answer, l.APIVersion+" "+l.Kind, what)
		if l.Message != "" {
			line += ": " + oneLine(l.Message)
		}
		fmt.Fprintf(w, "Lookup:\t%s\n", line)
	}
	if more := len(t.Lookups) - len(shown) + int(t.LookupsOmitted); more > 0 {
		fmt.Fprintf(w, "Lookup:\t%d more (-o wide, -o yaml)\n", more)
	}
}

// display names a node: Kind/name, with its namespace when it is not the
// parent's (a cluster-scoped member: Kind/name).
func display(n Node, parentNS string, isParent bool) string {
	if isParent || n.Namespace == parentNS || n.Namespace == "" {
		return n.Kind + "/" + n.Name
	}
	return n.Kind + "/" + n.Namespace + "/" + n.Name
}

func accessReason(n Node) string {
	switch n.Access {
	case "Forbidden":
		return "you may not get it"
	case "NotFound":
		return "it does not exist"
	case "NotServed":
		return "its kind is not served"
	}
	return n.Message
}

func ageOf(n Node, now time.Time) string {
	if n.Access != "" {
		return "-"
	}
	return age(n.Created, now)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
