package chart

import "testing"

// TestIgnoreRules runs the table of Helm's own tests of its .helmignore
// rules (helm.sh/helm/v4@v4.3.1 pkg/ignore/rules_test.go, TestIgnore),
// with the fixtures' folders marked as folders.
func TestIgnoreRules(t *testing.T) {
	dirs := map[string]bool{"cargo": true, "cargo/": true, "mast/": true, "templates": true, ".": true, "./": true}
	tests := []struct {
		pattern, name string
		want          bool
	}{
		// Globs
		{`helm.txt`, "helm.txt", true},
		{`helm.*`, "helm.txt", true},
		{`helm.*`, "rudder.txt", false},
		{`*.txt`, "tiller.txt", true},
		{`*.txt`, "cargo/a.txt", true},
		{`cargo/*.txt`, "cargo/a.txt", true},
		{`cargo/*.*`, "cargo/a.txt", true},
		{`cargo/*.txt`, "mast/a.txt", false},
		{`ru[c-e]?er.txt`, "rudder.txt", true},
		{`templates/.?*`, "templates/.dotfile", true},
		// "." is never ignored (helm/helm#1776).
		{`.*`, ".", false},
		{`.*`, "./", false},
		{`.*`, ".joonix", true},
		{`.*`, "helm.txt", false},
		{`.*`, "", false},
		// Folders
		{`cargo/`, "cargo", true},
		{`cargo/`, "cargo/", true},
		{`cargo/`, "mast/", false},
		{`helm.txt/`, "helm.txt", false},
		// Negation, with Helm's meaning: what does not match is ignored.
		{`!helm.txt`, "helm.txt", false},
		{`!helm.txt`, "tiller.txt", true},
		{`!*.txt`, "cargo", true},
		{`!cargo/`, "mast/", true},
		// Rooted
		{`/a.txt`, "a.txt", true},
		{`/a.txt`, "cargo/a.txt", false},
		{`/cargo/a.txt`, "cargo/a.txt", true},
	}
	for _, tt := range tests {
		r := &IgnoreRules{}
		if err := r.add(tt.pattern); err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := r.Ignore(tt.name, dirs[tt.name]); got != tt.want {
			t.Errorf("pattern %q, path %q: ignored %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestIgnoreRulesParse: comments, blanks and spaces are skipped; "**"
// and a bad glob are errors at their line, as in Helm's parser.
func TestIgnoreRulesParse(t *testing.T) {
	r, err := newIgnoreRules("\uFEFF# comment\n\n  *.bak  \n")
	if err != nil {
		t.Fatal(err)
	}
	// *.bak and Helm's default templates/.?*
	if len(r.patterns) != 2 || !r.Ignore("x/y.bak", false) || !r.Ignore("templates/.x.yaml", false) || r.Ignore("templates/sub/.x.yaml", false) {
		t.Errorf("rules %+v", r.patterns)
	}
	for text, want := range map[string]string{
		"a\n**/b\n": ".helmignore:2: double-star (**) syntax is not supported",
		"[\n":       ".helmignore:1: syntax error in pattern",
	} {
		if _, err := newIgnoreRules(text); err == nil || err.Error() != want {
			t.Errorf("%q: err = %v, want %q", text, err, want)
		}
	}
}
