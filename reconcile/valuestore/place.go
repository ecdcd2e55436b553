package valuestore

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MinPiece is the length below which a piece of a value (the value, or a
// line of a PEM block) is not looked for in the rendered objects: a short
// string turns up by chance ("1234"), and finding one would tell whoever
// may write values that a guess was right (the store of their namespace
// gains a key). A value with no piece this long (randNumeric 4, randInt,
// a short randAlphaNum) is kept by the controller.
const MinPiece = 16

// Controller is the destination Place gives a value that goes to the
// controller's store: found in no namespace's objects whole.
const Controller = ""

// Place says where each of values (key → the value's JSON, as
// templates/generators keeps them) is kept: in the store of each namespace
// whose rendered objects, objs, hold every piece of it, else (found only
// in cluster-scoped objects, split across namespaces, or in no object:
// hashed, unused, a call the templates stop making) in the controller's
// (Controller). It returns destination → the values kept there.
//
// A value's pieces are its strings (a certificate's and a key's, for
// genCA and genSignedCert) or, for a PEM block, each line of its body, of
// at least MinPiece characters; they are looked for in every string of
// an object (map keys too), in what a string decodes to as base64 (a
// Secret's data, a caBundle, a kubeconfig inside a Secret: up to three
// levels), and inside indented text (a PEM block in a YAML block scalar
// nested in a ConfigMap's file). A value is therefore never kept where a
// reader of Secrets could not already read every part of it: the
// public certificate of a CA in a tenant's ConfigMap does not bring the
// CA's key to that tenant's store, and no value is kept in a namespace
// whose objects do not hold it.
func Place(objs []*unstructured.Unstructured, values map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	if len(values) == 0 {
		return out
	}
	texts := map[string]*strings.Builder{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			continue // cluster-scoped: read by others than any namespace's readers
		}
		b := texts[ns]
		if b == nil {
			b = &strings.Builder{}
			texts[ns] = b
		}
		collect(b, o.Object, 0)
	}
	namespaces := slices.Sorted(maps.Keys(texts))
	for _, k := range slices.Sorted(maps.Keys(values)) {
		pieces := Pieces(values[k])
		placed := false
		for _, ns := range namespaces {
			if len(pieces) == 0 || !holdsAll(texts[ns].String(), pieces) {
				continue
			}
			put(out, ns, k, values[k])
			placed = true
		}
		if !placed {
			put(out, Controller, k, values[k])
		}
	}
	return out
}

// put keeps value v under key k in destination ns of out.
func put(out map[string]map[string]string, ns, k, v string) {
	if out[ns] == nil {
		out[ns] = map[string]string{}
	}
	out[ns][k] = v
}

// holdsAll reports whether text holds every one of pieces.
func holdsAll(text string, pieces []string) bool {
	for _, p := range pieces {
		if !strings.Contains(text, p) {
			return false
		}
	}
	return true
}

// Pieces are what Place looks for of a kept value (its JSON): every
// string in it, or each body line of a PEM block in it, of at least
// MinPiece characters; none when the value has none (a number, a short
// string: kept by the controller).
func Pieces(raw string) []string {
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, stringPieces(v)...)
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		}
	}
	walk(v)
	return out
}

// stringPieces are the pieces of one string of a value: the body lines
// of its PEM blocks (a block's armour lines, the same in every block, and
// its short last line are left out), else the string itself.
func stringPieces(s string) []string {
	if !strings.Contains(s, "-----BEGIN ") {
		if len(s) < MinPiece {
			return nil
		}
		return []string{s}
	}
	var out []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if len(line) < MinPiece || strings.HasPrefix(line, "-----") || strings.Contains(line, ":") {
			continue // armour, a header (Proc-Type: …), a short last line
		}
		out = append(out, line)
	}
	return out
}

// maxDecode is how deep collect decodes base64 inside base64.
const maxDecode = 3

// collect writes every string under v (map keys too) to b, each followed
// by a NUL, and, for a string or a run of base64 characters in it that
// decodes as base64 to text, the text too, to depth maxDecode.
func collect(b *strings.Builder, v any, depth int) {
	switch v := v.(type) {
	case string:
		text(b, v, depth)
	case []any:
		for _, e := range v {
			collect(b, e, depth)
		}
	case map[string]any:
		for k, e := range v {
			text(b, k, depth)
			collect(b, e, depth)
		}
	}
}

// text writes s, and what its base64 runs decode to, to b.
func text(b *strings.Builder, s string, depth int) {
	b.WriteString(s)
	b.WriteByte(0)
	if depth >= maxDecode || len(s) < MinPiece {
		return
	}
	for _, run := range base64Runs(s) {
		if raw, ok := decodeBase64(run); ok {
			text(b, raw, depth+1)
		}
	}
}

// base64Runs are the runs of base64 characters (standard or URL
// alphabet, padding, and the line breaks of wrapped base64) in s of at
// least MinPiece characters.
func base64Runs(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isBase64Char(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= MinPiece {
			out = append(out, s[start:i])
		}
		start = -1
	}
	return out
}

func isBase64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '+' || c == '/' || c == '-' || c == '_' || c == '=' || c == '\n' || c == '\r'
}

// decodeBase64 decodes run, in any of the four encodings, to text that
// holds no NUL (a value's pieces are text).
func decodeBase64(run string) (string, bool) {
	run = strings.NewReplacer("\n", "", "\r", "").Replace(run)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		raw, err := enc.DecodeString(run)
		if err == nil && len(raw) > 0 && !bytes.ContainsRune(raw, 0) {
			return string(raw), true
		}
	}
	return "", false
}
