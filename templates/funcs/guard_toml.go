package funcs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/stencil-dev/stencil/templates/measure"
)

// This file binds Helm's TOML functions (toToml, mustToToml, fromToml)
// to the render's guard; reading and writing TOML is
// github.com/BurntSushi/toml's, the library Helm's engine calls.

// tomlQuotedRE matches what a TOML message quotes: a key or a bit of the
// document, which may be a value.
var tomlQuotedRE = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'[^']*'")

// encodeTOML writes v as Helm's toToml does.
func encodeTOML(w io.Writer, v any) error { return toml.NewEncoder(w).Encode(v) }

// tomlMessage is an encoding error of TOML without what it quotes.
func tomlMessage(err error) string { return tomlQuotedRE.ReplaceAllString(err.Error(), "…") }

// addTOML binds toToml, mustToToml and fromToml. As in Helm, toToml
// writes the encoder's error message as its result ("toml: cannot
// encode array with nil element") and mustToToml fails the render.
func addTOML(t map[string]binder) {
	t["toToml"] = func(g *Guard) any {
		return g.streamed("toToml", encodeTOML, nil, func(err error) (string, error) { return err.Error(), nil })
	}
	t["mustToToml"] = func(g *Guard) any {
		return g.streamed("mustToToml", encodeTOML, nil, func(err error) (string, error) {
			return "", funcError("mustToToml", "%s", tomlMessage(err))
		})
	}
	t["fromToml"] = func(g *Guard) any { return g.fromTOML }
}

// fromTOML is Helm's fromToml: the document's tables as a map, or a map
// whose "Error" holds the syntax error (its line and message, without
// what the message quoted, as fromYaml's). The text must fit the budget
// and nest at most MaxValueDepth deep (the parser recurses once per
// nested array or inline table); what it parses to is measured and
// charged.
func (g *Guard) fromTOML(s string) (out map[string]any, err error) {
	const fn = "fromToml"
	if err := g.room(fn, int64(len(s))); err != nil {
		return nil, err
	}
	if tomlNesting(s) > measure.MaxValueDepth {
		return nil, tooLarge(fn, "the TOML nests more than %d deep (MaxValueDepth)", measure.MaxValueDepth)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, funcError(fn, "the TOML cannot be read")
		}
	}()
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = fn + ": " + tomlSyntax(err)
		return m, nil
	}
	shape, err := measure.New(fn, g.remaining()).Measure(m)
	if err != nil {
		return nil, err
	}
	return m, g.take(fn, measure.AddSat(shape.Bytes, measure.MulSat(shape.Items, elementBytes)))
}

// tomlSyntax is a TOML parse error as its line and message, without what
// it quotes.
func tomlSyntax(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: %s", pe.Position.Line, tomlQuotedRE.ReplaceAllString(pe.Message, "…"))
	}
	return strings.TrimPrefix(tomlMessage(err), "toml: ")
}

// streamed wraps the serializers that write to a stream (toToml,
// mustToToml, toYamlPretty): the value is measured as serializer
// measures it (MaxValueDepth; bytes left), then written to a buffer that
// refuses to grow past the bytes left (TOML repeats a table's whole key
// in its header, so its text can be larger than the measure), and the
// result (finish's, when given) charged. An error of encode goes to
// onErr; a panic, which Helm's engine turns into an error of the render,
// is one.
func (g *Guard) streamed(fn string, encode func(io.Writer, any) error, finish func(string) string, onErr func(error) (string, error)) func(any) (string, error) {
	return func(v any) (out string, err error) {
		if _, err := measure.New(fn, g.remaining()).Measure(v); err != nil {
			return "", err
		}
		w := &cappedBuffer{g: g, fn: fn}
		defer func() {
			if r := recover(); r != nil {
				out, err = "", funcError(fn, "the value cannot be serialized (a %T)", v)
			}
		}()
		if err := encode(w, v); err != nil {
			if w.over != nil {
				return "", w.over
			}
			if out, err = onErr(err); err != nil {
				return "", err
			}
			return out, g.take(fn, int64(len(out)))
		}
		if out = w.b.String(); finish != nil {
			out = finish(out)
		}
		return out, g.take(fn, int64(len(out)))
	}
}

// cappedBuffer is a buffer that refuses a write past the bytes left of
// its guard's budget, remembering the refusal (over).
type cappedBuffer struct {
	g    *Guard
	fn   string
	b    bytes.Buffer
	over error
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if err := c.g.room(c.fn, int64(c.b.Len())+int64(len(p))); err != nil {
		c.over = err
		return 0, err
	}
	return c.b.Write(p)
}

// tomlNesting bounds how deeply TOML text nests: the parts of the
// current table's header, plus those of the key being set, plus the
// arrays and inline tables open around the value being read (BurntSushi's
// parser recurses once per array or inline table, and keeps a table's
// whole key for each of its entries). Strings and comments are skipped;
// the bound is not less than the depth of what the text parses to.
func tomlNesting(s string) int {
	var stack []tomlFrame
	header, cur, deepest := 0, 0, 0
	key, lineStart := true, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			continue
		case c == '\n':
			if len(stack) == 0 {
				key, lineStart, cur = true, true, header
			}
			continue
		case c == '#':
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			i = skipTOMLString(s, i)
		case lineStart && c == '[' && len(stack) == 0:
			header, i = tomlHeader(s, i)
			cur = header
		case c == '[' || c == '{':
			stack = append(stack, tomlFrame{base: cur, table: c == '{'})
			cur++
			key = c == '{'
		case (c == ']' || c == '}') && len(stack) > 0:
			cur, stack = stack[len(stack)-1].base, stack[:len(stack)-1]
			key = false
		case c == ',' && len(stack) > 0 && stack[len(stack)-1].table:
			cur, key = stack[len(stack)-1].base+1, true
		case key && c == '.':
			cur++
		case key && c == '=':
			cur++
			key = false
		}
		lineStart = false
		deepest = max(deepest, cur)
	}
	return deepest
}

// tomlFrame is an array or inline table open in tomlNesting: the depth
// around it, and whether keys are set in it.
type tomlFrame struct {
	base  int
	table bool
}

// tomlHeader reads the table header at s[i] ("[a.b]" or "[[a.b]]") and
// returns its depth (its keys, and the list of an array of tables) and
// the index of its last byte.
func tomlHeader(s string, i int) (depth, end int) {
	depth = 1
	if i+1 < len(s) && s[i+1] == '[' {
		depth, i = 2, i+1
	}
	for i++; i < len(s) && s[i] != ']' && s[i] != '\n'; i++ {
		switch s[i] {
		case '.':
			depth++
		case '"', '\'':
			i = skipTOMLString(s, i)
		}
	}
	for i+1 < len(s) && s[i+1] == ']' {
		i++
	}
	return depth, i
}

// skipTOMLString returns the index of the last byte of the string that
// starts at s[i] (its closing quote; the end of the line, or of s, for
// one that does not close): basic ("...", with escapes) or literal
// ('...'), on one line or, tripled, on several.
func skipTOMLString(s string, i int) int {
	q := s[i]
	if strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		end := strings.Repeat(string(q), 3)
		for j := i + 3; j < len(s); j++ {
			if q == '"' && s[j] == '\\' {
				j++
				continue
			}
			if strings.HasPrefix(s[j:], end) {
				j += 2
				for j+1 < len(s) && s[j+1] == q { // up to two quotes may end the content
					j++
				}
				return j
			}
		}
		return len(s) - 1
	}
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '"' && s[j] == '\\':
			j++
		case s[j] == q:
			return j
		case s[j] == '\n':
			return j - 1
		}
	}
	return len(s) - 1
}
