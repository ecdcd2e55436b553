package migrate

import (
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// lookAhead bounds how far keepLineStyles looks for a line of the
// original document.
const lookAhead = 64

// keepLineStyles puts back the spacing yaml.v3 normalizes in the lines
// of a document it re-encodes (blanks before a line comment, inside a
// flow collection): walking both in order, a line of out that is not a
// line of orig but says the same as one (same indentation, read alone
// the same value and the same comments) becomes that line. A line whose
// value changed never matches, so only spacing is put back.
func keepLineStyles(orig, out string) string {
	o := strings.Split(orig, "\n")
	lines := strings.Split(out, "\n")
	p := 0
	for i, l := range lines {
		for k := p; k < len(o) && k < p+lookAhead; k++ {
			if o[k] == l {
				p = k + 1
				break
			}
			if sameLine(o[k], l) {
				lines[i], p = o[k], k+1
				break
			}
		}
	}
	return strings.Join(lines, "\n")
}

// sameLine reports whether two lines differ only in spacing: the same
// indentation and list dash, and, read alone as YAML, the same value and
// the same comments.
func sameLine(a, b string) bool {
	pa, ra := splitPrefix(a)
	pb, rb := splitPrefix(b)
	if pa != pb || ra == rb || strings.TrimSpace(ra) == "" {
		return false
	}
	va, ca, okA := lineValue(ra)
	vb, cb, okB := lineValue(rb)
	return okA && okB && ca == cb && equal(va, vb)
}

// splitPrefix splits a line into its indentation (with a list dash) and
// the rest.
func splitPrefix(l string) (string, string) {
	rest := strings.TrimLeft(l, " ")
	for strings.HasPrefix(rest, "- ") {
		rest = strings.TrimLeft(rest[2:], " ")
	}
	return l[:len(l)-len(rest)], rest
}

// lineValue reads one line alone as YAML: its value as kubectl reads it
// and its comments.
func lineValue(l string) (any, string, bool) {
	var n kyaml.Node
	if kyaml.Unmarshal([]byte(l), &n) != nil {
		return nil, "", false
	}
	v, err := decodeYAML([]byte(l))
	if err != nil {
		return nil, "", false
	}
	var comments []string
	var walk func(*kyaml.Node)
	walk = func(x *kyaml.Node) {
		comments = append(comments, x.HeadComment, x.LineComment, x.FootComment)
		for _, c := range x.Content {
			walk(c)
		}
	}
	walk(&n)
	return v, strings.Join(comments, "\x00"), true
}
