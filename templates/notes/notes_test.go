package notes_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/notes"
)

func TestIsNotes(t *testing.T) {
	for p, want := range map[string]bool{
		"templates/NOTES.txt":            true,
		"templates/extra/MY-NOTES.txt":   true,
		"charts/sub/templates/NOTES.txt": true,
		"templates/notes.txt":            false, // Helm's suffix is case-sensitive
		"templates/NOTES.txt.bak":        false,
		"templates/cm.yaml":              false,
	} {
		if got := notes.IsNotes(p); got != want {
			t.Errorf("IsNotes(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestStatus(t *testing.T) {
	long := strings.Repeat("line of notes ✓\n", 600) // 10,800 bytes
	tests := []struct {
		name string
		in   notes.Notes
		want func(string) bool
	}{
		{"none", notes.Notes{}, func(s string) bool { return s == "" }},
		{"none, sensitive", notes.Notes{Sensitive: true}, func(s string) bool { return s == "" }},
		{"short", notes.Notes{Text: "Visit https://shop"}, func(s string) bool { return s == "Visit https://shop" }},
		{"sensitive", notes.Notes{Text: "password: s3cr3t", Sensitive: true}, func(s string) bool { return s == notes.Withheld }},
		{"exactly the bound", notes.Notes{Text: strings.Repeat("x", notes.MaxStatusBytes)}, func(s string) bool { return len(s) == notes.MaxStatusBytes && !strings.Contains(s, "truncated") }},
		{"long, cut at a line", notes.Notes{Text: long}, func(s string) bool {
			head, marker, ok := strings.Cut(s, "\n… (truncated: NOTES.txt printed 10800 bytes;")
			return ok && strings.HasPrefix(long, head+"\n") && strings.HasSuffix(head, "✓") && len(s) <= notes.MaxStatusBytes && marker != ""
		}},
		{"long, one line, cut at a character", notes.Notes{Text: strings.Repeat("✓", 3000)}, func(s string) bool {
			return utf8.ValidString(s) && len(s) <= notes.MaxStatusBytes && strings.Contains(s, "truncated: NOTES.txt printed 9000 bytes")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := notes.Status(tt.in); !tt.want(got) {
				t.Errorf("Status = %q (%d bytes)", got, len(got))
			}
		})
	}
}
