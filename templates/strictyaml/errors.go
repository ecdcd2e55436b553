package strictyaml

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Error is a YAML error reduced to its line (relative to the text
// parsed; 0 when unknown) and a message with what it quoted removed.
type Error struct {
	// Line is the 1-based line in the text parsed, 0 when unknown.
	Line int
	// Msg says what is wrong, quoting no value (a duplicate key keeps the
	// key, cut to 64 bytes: keys are the document's structure).
	Msg string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

var (
	yamlLineRE      = regexp.MustCompile(`line (\d+)`)
	yamlDuplicateRE = regexp.MustCompile(`line (\d+): key (.*) already set in map`)
	yamlQuotedRE    = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`|'[^']*'")
	yamlPrefixRE    = regexp.MustCompile(`^(error converting YAML to JSON: |error unmarshaling JSON: |while decoding JSON: )*(yaml: )?(unmarshal errors:\s*)?(line \d+: )?`)
)

// NewError reduces err. A duplicate key keeps the key (up to 64
// bytes: keys are the document's structure); every other quoted part is
// dropped, since it may be a value.
func NewError(err error) *Error {
	msg := err.Error()
	e := &Error{}
	if m := yamlDuplicateRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		key := m[2]
		if len(key) > 64 {
			key = key[:64] + "…"
		}
		e.Msg = "duplicate key " + key
		return e
	}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
	}
	if i := strings.Index(msg, ", key:"); i >= 0 { // sigs.k8s.io/yaml's unsupported key prints the value
		msg = msg[:i]
	}
	msg = yamlPrefixRE.ReplaceAllString(msg, "")
	e.Msg = yamlQuotedRE.ReplaceAllString(msg, "…")
	if strings.Contains(msg, "excessive aliasing") {
		e.Msg = "too many aliases (excessive aliasing)"
	}
	return e
}

// AsError is err as an *Error: the one it is or wraps (every error of
// ToJSON, Decode and DecodeSized is one), or else err reduced by NewError,
// so that what it quoted is dropped all the same.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return NewError(err)
}

// JSONSyntax is a JSON error without the text it quotes.
func JSONSyntax(fn string, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: not valid JSON at byte %d", fn, se.Offset)
	}
	return fn + ": the JSON does not decode to the expected type"
}
