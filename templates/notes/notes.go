package notes

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// RootFile is the release's notes: the root chart's NOTES.txt.
const RootFile = "templates/NOTES.txt"

// suffix names a notes file, as Helm's notesFileSuffix.
const suffix = "NOTES.txt"

// IsNotes reports a notes file, p the path of a template (a file of a
// chart's templates/, IsTemplate) in the bundle or in its chart: one
// whose name ends in NOTES.txt (templates/NOTES.txt,
// templates/extra/MY-NOTES.txt, charts/sub/templates/NOTES.txt), as
// Helm's strings.HasSuffix(name, "NOTES.txt"). Helm executes each and
// parses none as objects; only the root chart's templates/NOTES.txt is
// printed.
func IsNotes(p string) bool { return strings.HasSuffix(p, suffix) }

// Notes is what a render made of the root chart's templates/NOTES.txt.
type Notes struct {
	// Text is what it printed, "<no value>" erased as in every template,
	// without the blank lines and spaces around it (Helm prints
	// strings.TrimSpace of it): "" when the chart has no NOTES.txt or it
	// printed only spaces.
	Text string `json:"text,omitempty"`
	// Sensitive: the render looked up objects, read observed values or
	// called a generator. A template's data is shared, so what any of
	// them read may reach the text: Status does not show it.
	Sensitive bool `json:"sensitive,omitempty"`
}

// Trim makes a Notes' Text of what NOTES.txt printed.
func Trim(printed string) string { return strings.TrimSpace(printed) }

// MaxStatusBytes bounds the notes a parent's status holds (Status): a
// status is written on every pass that changes it, and read by every
// watcher of parents, so it holds the start of long notes; `stencil
// render --notes` prints them whole.
const MaxStatusBytes = 4096

// Withheld is the status's notes of a Sensitive render.
const Withheld = "(NOTES.txt is not shown: the render looked up objects, read observed values or generated values, which never reach a status; `stencil render --notes` prints it)"

// Status is n as a parent's status.notes records it: "" without notes,
// Withheld for a Sensitive render, else the text, cut past
// MaxStatusBytes at the last line (or character) that fits, with a
// marker saying how long it was.
func Status(n Notes) string {
	switch {
	case n.Text == "":
		return ""
	case n.Sensitive:
		return Withheld
	case len(n.Text) <= MaxStatusBytes:
		return n.Text
	}
	marker := fmt.Sprintf("\n… (truncated: NOTES.txt printed %d bytes; `stencil render --notes` prints them all)", len(n.Text))
	cut := MaxStatusBytes - len(marker)
	for cut > 0 && !utf8.RuneStart(n.Text[cut]) {
		cut--
	}
	head := n.Text[:cut]
	if i := strings.LastIndexByte(head, '\n'); i > cut/2 {
		head = head[:i]
	}
	return head + marker
}
