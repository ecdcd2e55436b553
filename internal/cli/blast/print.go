package blast

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/internal/cli/parents"
)

// maxFieldsShown is the most changed fields listed per child; -o diff
// shows them all.
const maxFieldsShown = 10

// maxFailuresNamed is the most failing parents the summary names.
const maxFailuresNamed = 3

// printResult writes what the Bundle change does to one parent: nothing
// when unchanged, else a header (`# team-a/shop (Composition)`) and the
// changed children, or why it would fail, then the status outputs that
// would change.
func printResult(w io.Writer, r *blastResult, diffs bool) {
	if r.outcome == unchanged && len(r.outputs) == 0 {
		return
	}
	header := r.kind
	if r.parent.ParentSpec().Suspend {
		header += ", suspended: nothing is applied until it resumes"
	}
	fmt.Fprintf(w, "# %s (%s)\n", r.name(), header)
	switch r.outcome {
	case leftAlone:
		fmt.Fprintf(w, "  left alone: %s\n", r.leftAlone)
	case pinned, held:
		fmt.Fprintf(w, "  %s\n", r.failures[0])
	case renderFails:
		for _, f := range r.failures {
			fmt.Fprintf(w, "  would fail to render: %s\n", f)
		}
	case applyFails:
		for _, f := range r.failures {
			fmt.Fprintf(w, "  would fail to apply: %s\n", f)
		}
	case unchecked:
		fmt.Fprintf(w, "  could not be checked: %v\n", r.err)
	case changes:
		for _, c := range r.children {
			printChild(w, c, diffs)
		}
	}
	for _, o := range r.outputs {
		if diffs { // as diff -f prints them
			fmt.Fprintf(w, "# %s: %s\n", parents.Describe(r.parent), o)
		} else {
			fmt.Fprintf(w, "  %s\n", o)
		}
	}
}

// printChild writes one changed child: a line and its changed fields, or,
// with diffs, its unified diff (and `# ref would be pruned` lines, as the
// per-file diff writes them).
func printChild(w io.Writer, c childChange, diffs bool) {
	if diffs {
		if c.diff != "" {
			fmt.Fprint(w, c.diff)
		} else {
			fmt.Fprintf(w, "# %s %s\n", c.ref, c.what)
		}
		return
	}
	fmt.Fprintf(w, "  %s %s\n", c.ref, c.what)
	for i, f := range c.fields {
		if i == maxFieldsShown {
			fmt.Fprintf(w, "      ... and %d more fields (-o diff shows them)\n", len(c.fields)-i)
			break
		}
		fmt.Fprintf(w, "      %s\n", f)
	}
}

// summarize writes the summary line: "3 Compositions: 1 change, 1
// unchanged, 1 would fail to render: team-a/shop templates/cm.yaml:6: ...".
func summarize(results []*blastResult) string {
	var b strings.Builder
	b.WriteString(countParents(results))
	b.WriteString(": ")
	count := func(o outcome) int {
		n := 0
		for _, r := range results {
			if r.outcome == o {
				n++
			}
		}
		return n
	}
	fmt.Fprintf(&b, "%d change, %d unchanged", count(changes), count(unchanged))
	if n := count(leftAlone); n > 0 {
		fmt.Fprintf(&b, ", %d left alone", n)
	}
	if n := count(pinned); n > 0 {
		fmt.Fprintf(&b, ", %d pinned", n)
	}
	if n := count(held); n > 0 {
		fmt.Fprintf(&b, ", %d held (values refused): %s", n, nameFailures(results, held))
	}
	for _, f := range []struct {
		o    outcome
		verb string
	}{{renderFails, "would fail to render"}, {applyFails, "would fail to apply"}, {unchecked, "could not be checked"}} {
		if n := count(f.o); n > 0 {
			fmt.Fprintf(&b, ", %d %s: %s", n, f.verb, nameFailures(results, f.o))
		}
	}
	return b.String()
}

// countParents writes how many parents there are: "12 Compositions", or
// with instances of published kinds "12 instances (10 Compositions, 2
// AppService)".
func countParents(results []*blastResult) string {
	byKind := map[string]int{}
	var kinds []string
	for _, r := range results {
		if byKind[r.kind] == 0 {
			kinds = append(kinds, r.kind)
		}
		byKind[r.kind]++
	}
	plural := func(n int, noun string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", noun)
		}
		return fmt.Sprintf("%d %ss", n, noun)
	}
	if len(kinds) == 1 && kinds[0] == "Composition" {
		return plural(len(results), "Composition")
	}
	slices.SortFunc(kinds, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "Composition":
			return -1
		case b == "Composition":
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		if k == "Composition" {
			parts[i] = plural(byKind[k], k)
		} else {
			parts[i] = fmt.Sprintf("%d %s", byKind[k], k)
		}
	}
	return fmt.Sprintf("%s (%s)", plural(len(results), "instance"), strings.Join(parts, ", "))
}

// nameFailures names the first parents with outcome o and why:
// "team-a/shop templates/cm.yaml:6: ...; team-b/web (AppService) ...".
func nameFailures(results []*blastResult, o outcome) string {
	var named []string
	more := 0
	for _, r := range results {
		if r.outcome != o {
			continue
		}
		if len(named) == maxFailuresNamed {
			more++
			continue
		}
		name := r.name()
		if r.kind != "Composition" {
			name += " (" + r.kind + ")"
		}
		why := ""
		if len(r.failures) > 0 {
			why = r.failures[0]
		} else if r.err != nil {
			why = r.err.Error()
		}
		named = append(named, name+" "+brief(why))
	}
	if more > 0 {
		named = append(named, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(named, "; ")
}

// maxReasonLength is the most of a failure's reason the summary shows;
// the parent's own lines above it show all of it.
const maxReasonLength = 100

// brief is the first line of a reason, cut to maxReasonLength runes.
func brief(why string) string {
	why, _, cut := strings.Cut(why, "\n")
	if r := []rune(why); len(r) > maxReasonLength {
		why, cut = string(r[:maxReasonLength]), true
	}
	if cut {
		why += " ..."
	}
	return why
}

// exitStatus is diff's exit status for a Bundle change: 2 when a parent
// would fail or could not be checked, 1 when one would change, else 0.
func exitStatus(results []*blastResult) int {
	code := 0
	for _, r := range results {
		switch r.outcome {
		case renderFails, applyFails, unchecked:
			return 2
		case changes, leftAlone, held:
			code = 1
		}
	}
	return code
}
