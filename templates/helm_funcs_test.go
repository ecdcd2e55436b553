package templates_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// The functions Helm v4 added (toToml, mustToToml, fromToml, mustToYaml,
// toYamlPretty and the duration helpers) give Helm's output: the
// differential test TestFunctionsAsHelm (hack/helmbench) renders them with
// Helm's engine too. These tests hold what Helm does not have: their
// bounds, and errors at the line of the call that quote no argument.

// TestHelmV4FunctionsBounded: TOML that nests deeper than MaxValueDepth
// is refused before the parser recurses into it (arrays, inline tables,
// dotted keys, headers); brackets in strings and comments do not count;
// a TOML text larger than the bytes left is refused while it is written.
func TestHelmV4FunctionsBounded(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	refused := map[string]string{
		"arrays":         "a = " + deep("[", "]", 100),
		"inline tables":  "a = " + deep("{b = ", "}", 100) + "",
		"mixed":          "a = " + deep("[{b = ", "}]", 50),
		"dotted keys":    strings.Repeat("a.", 100) + "b = 1",
		"a header":       "[" + strings.Repeat("a.", 100) + "b]\nc = 1",
		"header and key": "[[" + strings.Repeat("a.", 60) + "b]]\n" + strings.Repeat("c.", 40) + "d = 1",
		"unclosed array": "a = " + strings.Repeat("[", 100000),
	}
	for name, doc := range refused {
		_, err := renderFiles(t, tmpl("a: 1\n{{ fromToml (.Files.Get \"f.toml\") }}\n"), "", withFile("f.toml", doc))
		var re *templates.RenderError
		if !errors.As(err, &re) || re.Reason != templates.ReasonTooLarge || re.Line != 2 || !strings.Contains(re.Msg, "fromToml: the TOML nests more than 100 deep") {
			t.Errorf("%s: err = %v, want fromToml refused at templates/t.yaml:2 for its depth", name, err)
		}
	}
	accepted := map[string]string{
		"99 arrays":         "a = " + deep("[", "]", 98),
		"brackets in text":  "a = \"" + strings.Repeat("[{", 200) + "\"\nb = '" + strings.Repeat("[", 200) + "'\n# " + strings.Repeat("[", 200),
		"multi-line string": "a = \"\"\"\n" + strings.Repeat("[", 200) + "\\\"\"\"\"\"\nb = '''" + strings.Repeat("{", 200) + "'''",
		"many tables":       strings.Repeat("[[t]]\nx = [1, [2, {y = 3}]]\n", 200),
		"many floats":       "a = [" + strings.Repeat("1.5, ", 500) + "2.5]",
	}
	for name, doc := range accepted {
		out, err := renderFiles(t, tmpl(cm("{{ hasKey (fromToml (.Files.Get \"f.toml\")) \"Error\" | not | quote }}")), "", withFile("f.toml", doc))
		if err != nil || !strings.Contains(out, `v: "true"`) {
			t.Errorf("%s: err = %v, output\n%s\nwant the document read", name, err, out)
		}
	}
	// Each level's header repeats the whole key: 90 levels of a 16 KiB key
	// write about 66 MiB of TOML from a value that measures 1.5 MiB.
	big := "{{ $k := repeat 16400 \"k\" }}{{ $m := dict \"v\" 1 }}{{ range until 90 }}{{ $m = dict $k $m \"v\" 1 }}{{ end }}\n{{ toToml $m | len }}"
	_, err := renderFiles(t, tmpl(big), "")
	var re *templates.RenderError
	if !errors.As(err, &re) || re.Reason != templates.ReasonTooLarge || re.Line != 2 || !strings.Contains(re.Msg, "toToml: result larger than") {
		t.Errorf("toToml of a value whose TOML passes the budget: err = %v, want a ReasonTooLarge at templates/t.yaml:2", err)
	}
}

// TestHelmV4FunctionErrors: the must forms fail the render with a
// RenderError at the line of the call, naming the function and quoting
// no argument; fromToml's syntax error in its result quotes nothing
// either (as fromYaml's).
func TestHelmV4FunctionErrors(t *testing.T) {
	for _, tt := range []struct{ call, msg string }{
		{`mustToDuration "secret-1h"`, "mustToDuration: want a duration"},
		{`mustToDuration (list)`, "mustToDuration: want a duration"},
		{`mustToToml (list (dict "secret-1" 1))`, "mustToToml: toml: top-level values must be Go maps or structs"},
		{`mustToToml (dict "secret-key" (list nil))`, "mustToToml: toml: cannot encode array with nil element"},
		{`mustToYaml (dict "secret-key" (float64 "NaN"))`, "mustToYaml: the value cannot be serialized"},
		{`toRawJson (dict "secret-key" (float64 "NaN"))`, "toRawJson: the value cannot be serialized"},
	} {
		_, err := renderFiles(t, tmpl("a: 1\nb: {{ "+tt.call+" }}\n"), "")
		var re *templates.RenderError
		if !errors.As(err, &re) || re.File != "templates/t.yaml" || re.Line != 2 || !strings.Contains(re.Msg, tt.msg) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: err = %v, want a RenderError at templates/t.yaml:2 saying %q, quoting no argument", tt.call, err, tt.msg)
		}
	}
	out, err := renderFiles(t, tmpl(cm(`{{ (fromToml "a = secretvalue").Error | quote }}`)), "")
	if err != nil || !strings.Contains(out, "v: 'fromToml: line 1: ") || strings.Contains(out, "secret") {
		t.Errorf("fromToml of a syntax error: err = %v, output\n%s\nwant its line and no quoted value", err, out)
	}
}

// TestDurationHelpersNeverReadTheClock: the duration helpers convert
// what they are given, whatever the time (durationRound alone takes a
// time, and refuses it unless allowNondeterministic).
func TestDurationHelpersNeverReadTheClock(t *testing.T) {
	call := `{{ list (durationSeconds "1h") (durationRoundTo "1h29m" "1h") (durationTruncateTo 5400 "1h") (mustToDuration 1.5) (durationDays (mustToDuration "36h")) | toJson | quote }}`
	out, err := renderFiles(t, tmpl(cm(call)), "")
	if err != nil || !strings.Contains(out, `v: '[3600,3600000000000,3600000000000,1500000000,1.5]'`) {
		t.Errorf("err = %v, output\n%s", err, out)
	}
	_, err = renderFiles(t, tmpl(cm(`{{ durationSeconds (toDate "2006" "2024") }}`)), "")
	if err != nil {
		t.Errorf("a time is not a duration, and is 0 as in Helm: %v", err)
	}
}

// withFile adds a file to the bundle.
func withFile(name, data string) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) { s.Files[name] = data }
}
