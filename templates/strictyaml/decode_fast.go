package strictyaml

import (
	"strings"
	"unicode/utf8"

	"github.com/stencil-dev/stencil/templates/measure"
	yamlv2 "go.yaml.in/yaml/v2"
)

// This file reads the YAML templates usually render (block mappings and
// sequences, one scalar a line, plain or quoted without escapes, literal
// block scalars with | or |-, [] and {} and flow lists of scalars, keys
// plain or quoted without escapes)
// without go.yaml.in/yaml/v2's general parser, whose scanner was half of
// a warm render. Whatever it is not sure to read exactly as yaml/v2 does
// (anchors, tags, folded or |+ block scalars, escapes, a comment after a
// block scalar's indicator or on a "-" alone, a plain or quoted scalar
// of several lines but as a mapping's value (or with a blank line), keys
// beyond ASCII, characters yaml/v2 does not print or reads as line breaks
// (printable), tabs, a duplicate key, an error) it declines, and
// Decode parses the document the general way. Plain scalars are
// resolved as yaml/v2 resolves them; those that may be numbers in another
// form than a plain decimal by yaml/v2 itself. It pays for itself: without
// it a warm render of the benchmark bundles (BenchmarkRender*) takes about
// three times as long. TestDecodeYAMLMatchesOracle (package templates, on its YAML corpus)
// holds it to yaml/v2.

// fastParser reads one document line by line.
type fastParser struct {
	lines []string
	i     int
	c     *unstructuredConverter
}

// decodeFast reads doc; ok is false when it declines.
func decodeFast(doc string, c *unstructuredConverter) (v any, ok bool) {
	for i := 0; i < len(doc); {
		if b := doc[i]; b < utf8.RuneSelf {
			if (b < 0x20 && b != '\n') || b == 0x7f {
				return nil, false // tabs, CR, control characters
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(doc[i:])
		if !printable(r, size) {
			return nil, false
		}
		i += size
	}
	p := &fastParser{lines: strings.Split(doc, "\n"), c: c}
	ind, text, ok := p.peek()
	if !ok {
		c.bytes += 6
		return nil, true // only blank lines and comments: null
	}
	if !isSeqItem(text) {
		if _, _, isKey := splitKey(text); !isKey {
			return nil, false
		}
	}
	v, ok = p.collection(ind)
	if !ok {
		return nil, false
	}
	if _, _, more := p.peek(); more {
		return nil, false
	}
	return v, true
}

// printable reports whether r, a character of size bytes beyond ASCII,
// is one yaml/v2 reads as a character of text: valid UTF-8 within its
// printable set (U+00A0 to U+FFFD, but for the byte order mark: its
// reader refuses the other characters as control characters, those
// beyond U+FFFF included), and none of the line breaks of YAML 1.1
// (U+2028, U+2029; U+0085 is below the set). Controller-gen's CRD
// descriptions hold some (“quotes”).
func printable(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1, r < 0xa0, r > 0xfffd, r == 0xfeff, r == 0x2028, r == 0x2029:
		return false
	}
	return true
}

// peek returns the next line that is not blank or a comment: its indent
// and its text without the indent and trailing spaces.
func (p *fastParser) peek() (int, string, bool) {
	for ; p.i < len(p.lines); p.i++ {
		l := strings.TrimRight(p.lines[p.i], " ")
		t := strings.TrimLeft(l, " ")
		if t == "" || t[0] == '#' {
			continue
		}
		return len(l) - len(t), t, true
	}
	return 0, "", false
}

// conv converts a resolved scalar to the unstructured form.
func (p *fastParser) conv(raw any) (any, bool) {
	v, err := p.c.value(raw)
	return v, err == nil
}

func isSeqItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// collection reads the mapping or sequence whose lines are indented ind.
func (p *fastParser) collection(ind int) (any, bool) {
	_, text, _ := p.peek()
	if isSeqItem(text) {
		return p.sequence(ind)
	}
	p.i++
	return p.mapping(ind, text)
}

// value reads the block value of a key (seqHere: a sequence may start at
// the key's own indent) or of a "-" alone on its line.
func (p *fastParser) value(ind int, seqHere bool) (any, bool) {
	next, text, ok := p.peek()
	switch {
	case !ok || next < ind:
		return p.conv(nil)
	case next > ind && (text == "{}" || text == "[]"):
		p.i++ // toYaml of an empty map or list, nindent-ed
		return p.inline(text)
	case next > ind:
		return p.collection(next)
	case seqHere && isSeqItem(text):
		return p.sequence(ind)
	}
	return p.conv(nil)
}

// mapping reads a mapping indented ind whose first line, already read, is first.
func (p *fastParser) mapping(ind int, first string) (any, bool) {
	p.c.bytes += 3
	m := map[string]any{}
	text := first
	for {
		k, rest, ok := splitKey(text)
		if !ok {
			return nil, false
		}
		key, ok := p.key(k)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false // yaml/v2 says where
		}
		var v any
		switch rest {
		case "":
			v, ok = p.value(ind, true)
		case "|", "|-":
			v, ok = p.literal(ind, rest == "|-")
		default:
			if lines := p.continuation(ind); lines > 0 && (rest[0] == '"' || rest[0] == '\'') {
				v, ok = p.multilineQuoted(ind, rest, lines)
			} else if lines > 0 {
				v, ok = p.multiline(ind, rest, lines)
			} else {
				v, ok = p.inline(rest)
			}
		}
		if !ok {
			return nil, false
		}
		m[key] = v
		next, t, more := p.peek()
		if !more || next < ind {
			return m, true
		}
		if next > ind || isSeqItem(t) {
			return nil, false // a continuation line, or an error
		}
		p.i++
		text = t
	}
}

// continuation counts the lines after a key's line, indented ind, that
// continue a plain scalar begun on it (as controller-gen writes long
// descriptions in CRDs): lines indented more than the key, none blank or a
// comment. 0 when the next line is not one.
func (p *fastParser) continuation(ind int) int {
	n := 0
	for j := p.i; j < len(p.lines); j++ {
		t := strings.Trim(p.lines[j], " ")
		if t == "" || t[0] == '#' || len(p.lines[j])-len(strings.TrimLeft(p.lines[j], " ")) <= ind {
			break
		}
		n++
	}
	return n
}

// multiline reads a plain scalar whose first line, first, is on its key's
// line (the key indented ind) and which continues on the next lines
// (continuation): folded into one line, each line break a space, as YAML
// folds a plain scalar. It declines what could fold otherwise or be no
// plain scalar: a first line that is not a plain scalar or holds a #; a
// line holding ": " or " #" or ending with ":" (a line's first character
// is no indicator inside a plain scalar); a blank line or comment followed
// by a line indented more than the key (a line break kept, or an error).
func (p *fastParser) multiline(ind int, first string, lines int) (any, bool) {
	if strings.IndexByte(first, '#') >= 0 || strings.IndexByte("\"'[{", first[0]) >= 0 {
		return nil, false
	}
	if _, ok := scalar(first, false); !ok {
		return nil, false
	}
	var b strings.Builder
	b.WriteString(first)
	for j := p.i; j < p.i+lines; j++ {
		t := strings.Trim(p.lines[j], " ")
		if strings.Contains(t, ": ") || strings.Contains(t, " #") || strings.HasSuffix(t, ":") {
			return nil, false
		}
		b.WriteByte(' ')
		b.WriteString(t)
	}
	p.i += lines
	if next, _, more := p.peek(); more && next > ind {
		return nil, false
	}
	raw, ok := resolvePlain(b.String())
	if !ok {
		return nil, false
	}
	return p.conv(raw)
}

// multilineQuoted reads a double- or single-quoted scalar that opens on
// its key's line (first; the key indented ind) and closes at the end of
// the last of the next lines (continuation): each line break folded into
// a space, the spaces around it dropped, as YAML folds a quoted scalar;
// in double quotes the escapes \n, \t, \", \\ and "\ " read (yaml/v2
// knows no \/), in single quotes a doubled quote (controller-gen
// single-quotes descriptions holding ": "). It declines other escapes, an
// escaped line break, a quote that closes before the last line's end, and
// what plain scalars decline after them (multiline).
func (p *fastParser) multilineQuoted(ind int, first string, lines int) (any, bool) {
	unescape := unescapeDouble
	if first[0] == '\'' {
		unescape = unescapeSingle
	}
	var b strings.Builder
	for j := -1; j < lines; j++ {
		seg := first[1:]
		if j >= 0 {
			seg = strings.Trim(p.lines[p.i+j], " ")
			b.WriteByte(' ')
		}
		if j == lines-1 {
			if seg == "" || seg[len(seg)-1] != first[0] {
				return nil, false
			}
			seg = seg[:len(seg)-1] // its spaces before the quote are kept
		} else {
			seg = strings.TrimRight(seg, " ")
		}
		if !unescape(&b, seg) {
			return nil, false
		}
	}
	p.i += lines
	if next, _, more := p.peek(); more && next > ind {
		return nil, false
	}
	return p.conv(b.String())
}

// unescapeDouble writes seg, a part of a double-quoted scalar, to b with
// its escapes read; false for an escape it does not read, a backslash at
// its end or a quote that is not escaped.
func unescapeDouble(b *strings.Builder, seg string) bool {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch c {
		case '"':
			return false
		case '\\':
			if i++; i == len(seg) {
				return false
			}
			switch seg[i] {
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case '"', '\\', ' ':
				c = seg[i]
			default:
				return false
			}
		}
		b.WriteByte(c)
	}
	return true
}

// unescapeSingle writes seg, a part of a single-quoted scalar, to b with
// each doubled quote read as one; false for a quote that is not doubled.
func unescapeSingle(b *strings.Builder, seg string) bool {
	for i := 0; i < len(seg); i++ {
		if seg[i] == '\'' {
			if i++; i == len(seg) || seg[i] != '\'' {
				return false
			}
		}
		b.WriteByte(seg[i])
	}
	return true
}

// sequence reads a block sequence whose "-" are indented ind.
func (p *fastParser) sequence(ind int) (any, bool) {
	p.c.bytes += 3
	var l []any
	for {
		next, text, more := p.peek()
		if !more || next < ind || (next == ind && !isSeqItem(text)) {
			return l, true
		}
		if next > ind {
			return nil, false
		}
		p.i++
		var v any
		var ok bool
		if text == "-" {
			v, ok = p.value(ind, false)
		} else {
			rest := strings.TrimLeft(text[1:], " ")
			itemInd := ind + len(text) - len(rest)
			switch {
			case isSeqItem(rest):
				return nil, false // "- - x"
			case keyLike(rest):
				v, ok = p.mapping(itemInd, rest)
			default:
				v, ok = p.inline(rest)
			}
		}
		if !ok {
			return nil, false
		}
		l = append(l, v)
	}
}

// literal reads the lines of a literal block scalar (| or |-) whose key
// is indented ind: its indent is its first line's, and lines less
// indented end it. Blank lines at its start, lines of spaces longer than
// its indent, and the | + chomping are declined.
func (p *fastParser) literal(ind int, strip bool) (any, bool) {
	first := -1
	end := p.i
	for ; end < len(p.lines); end++ {
		l := p.lines[end]
		t := strings.TrimLeft(l, " ")
		n := len(l) - len(t)
		if t == "" {
			if first < 0 || n > first {
				return nil, false
			}
			continue
		}
		if first < 0 {
			if n <= ind {
				return nil, false // an empty block scalar
			}
			first = n
		}
		if n < first {
			break
		}
	}
	var b strings.Builder
	last := p.i // after the last line with content
	for i := p.i; i < end; i++ {
		if strings.TrimLeft(p.lines[i], " ") != "" {
			last = i + 1
		}
	}
	for i := p.i; i < last; i++ {
		if l := p.lines[i]; len(l) > first {
			b.WriteString(l[first:])
		}
		if i < last-1 || (!strip && i < len(p.lines)-1) { // the text may end without a line break
			b.WriteByte('\n')
		}
	}
	p.i = end
	return p.conv(b.String())
}

// splitKey splits "key: value" or "key:" with a plain key, or a quoted
// one without escapes, returned with its quotes ("helm.sh/hook": x, as
// charts quote annotation keys).
func splitKey(t string) (key, rest string, ok bool) {
	var i int
	if t != "" && (t[0] == '"' || t[0] == '\'') {
		key, ok = quotedKey(t)
		if !ok {
			return "", "", false
		}
		i = len(key)
	} else {
		if i = strings.Index(t, ": "); i < 0 {
			if !strings.HasSuffix(t, ":") {
				return "", "", false
			}
			i = len(t) - 1
		}
		key = t[:i]
		if key == "" || key[0] == '-' {
			return "", "", false
		}
		for j := 0; j < len(key); j++ {
			if !plainKeyByte(key[j]) {
				return "", "", false
			}
		}
	}
	if i+1 < len(t) {
		rest = strings.TrimLeft(t[i+1:], " ")
	}
	if strings.HasPrefix(rest, "#") {
		rest = "" // "key: # comment": its value is on the next lines
	}
	return key, rest, true
}

// quotedKey is the quoted key t begins with, quotes included, when a ":"
// follows it at the end of t or before a space; it declines a key that
// is empty or holds a backslash or an escaped quote (two single quotes).
func quotedKey(t string) (string, bool) {
	j := strings.IndexByte(t[1:], t[0]) + 1
	if j < 2 || strings.IndexByte(t[1:j], '\\') >= 0 {
		return "", false
	}
	if j+1 == len(t) || t[j+1] != ':' || (j+2 < len(t) && t[j+2] != ' ') {
		return "", false
	}
	return t[:j+1], true
}

func keyLike(t string) bool {
	_, _, ok := splitKey(t)
	return ok
}

// key is a plain key as yaml/v2 resolves it and sigs.k8s.io/yaml writes
// it, or a quoted one (splitKey), a string.
func (p *fastParser) key(k string) (string, bool) {
	var raw any
	if k[0] == '"' || k[0] == '\'' {
		raw = k[1 : len(k)-1]
	} else {
		var ok bool
		if raw, ok = resolvePlain(k); !ok {
			return "", false
		}
	}
	s, err := mapKey(raw)
	if err != nil {
		return "", false
	}
	p.c.bytes += measure.StringBytes(s) + 1
	return s, true
}

// inline reads a value written on its key's or its "-"'s line, maybe
// followed by a comment.
func (p *fastParser) inline(s string) (any, bool) {
	s, ok := cutComment(s)
	if !ok {
		return nil, false
	}
	switch {
	case s == "[]":
		p.c.bytes += 3
		return []any{}, true
	case s == "{}":
		p.c.bytes += 3
		return map[string]any{}, true
	case s[0] == '[' && s[len(s)-1] == ']':
		return p.flowList(s[1 : len(s)-1])
	}
	raw, ok := scalar(s, false)
	if !ok {
		return nil, false
	}
	return p.conv(raw)
}

// cutComment returns s, a value on one line not starting with #, without
// the comment that may follow it: after a space, a # outside quotes (a
// plain scalar cannot hold " #"; a quoted one or a flow list of scalars
// ends at its closing quote or bracket). ok is false when s does not end
// where it should (text after a closing quote or bracket), which the
// general parser reports.
func cutComment(s string) (string, bool) {
	if strings.IndexByte(s, '#') < 0 {
		return s, true
	}
	end := -1 // the end of a quoted scalar or flow list
	switch s[0] {
	case '"':
		if i := strings.IndexByte(s[1:], '"'); i >= 0 {
			end = i + 2
		}
	case '\'':
		for i := 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				end = i + 1
				break
			}
		}
	case '[':
		if i := strings.IndexByte(s, ']'); i >= 0 {
			end = i + 1
		}
	default:
		if i := strings.Index(s, " #"); i >= 0 {
			return strings.TrimRight(s[:i], " "), true
		}
		return s, true
	}
	if end < 0 {
		return "", false
	}
	rest := s[end:]
	if rest == "" {
		return s, true
	}
	if t := strings.TrimLeft(rest, " "); len(t) < len(rest) && t[0] == '#' {
		return s[:end], true
	}
	return "", false
}

// flowList reads the inside of [a, "b", 'c'].
func (p *fastParser) flowList(s string) (any, bool) {
	p.c.bytes += 3
	parts := strings.Split(s, ",")
	l := make([]any, 0, len(parts))
	for _, e := range parts {
		raw, ok := scalar(strings.Trim(e, " "), true)
		if !ok {
			return nil, false
		}
		v, ok := p.conv(raw)
		if !ok {
			return nil, false
		}
		l = append(l, v)
	}
	return l, true
}

// scalar is a plain or quoted scalar, resolved as yaml/v2 does: a
// double-quoted one may hold the escapes unescapeDouble reads, but not in
// a flow list, where none may hold flow indicators.
func scalar(s string, flow bool) (any, bool) {
	if s == "" {
		return nil, false
	}
	switch s[0] {
	case '"':
		return doubleQuoted(s[1:], flow)
	case '\'':
		return singleQuoted(s[1:], flow)
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, false
	case '-':
		if len(s) == 1 || s[1] == ' ' || strings.HasPrefix(s, "---") {
			return nil, false
		}
	case '.':
		if strings.HasPrefix(s, "...") {
			return nil, false
		}
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") ||
		(flow && strings.ContainsAny(s, ":#[]{}")) {
		return nil, false
	}
	return resolvePlain(s)
}

// plainKeyByte reports whether c may stand in a plain key the fast path
// reads: letters, digits and . _ / -.
func plainKeyByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '.' || c == '_' || c == '/' || c == '-'
}

// doubleQuoted is the double-quoted scalar whose text after the opening
// quote is in.
func doubleQuoted(in string, flow bool) (any, bool) {
	if len(in) == 0 || in[len(in)-1] != '"' {
		return nil, false
	}
	in = in[:len(in)-1]
	if flow && strings.ContainsAny(in, "\"\\,[]{}") {
		return nil, false
	}
	if strings.IndexByte(in, '\\') < 0 {
		if strings.IndexByte(in, '"') >= 0 {
			return nil, false
		}
		return in, true
	}
	var b strings.Builder
	if !unescapeDouble(&b, in) {
		return nil, false
	}
	return b.String(), true
}

// singleQuoted is the single-quoted scalar whose text after the opening
// quote is in: every quote inside doubled.
func singleQuoted(in string, flow bool) (any, bool) {
	if len(in) == 0 || in[len(in)-1] != '\'' {
		return nil, false
	}
	in = in[:len(in)-1]
	if strings.Count(in, "'")%2 != 0 || strings.Count(strings.ReplaceAll(in, "''", ""), "'") != 0 {
		return nil, false
	}
	if flow && strings.ContainsAny(in, ",[]{}") {
		return nil, false
	}
	return strings.ReplaceAll(in, "''", "'"), true
}

// plainWords are the plain scalars yaml/v2 reads as something else than
// a string by name (resolveMap); NaN and infinities are left to it.
var plainWords = map[string]any{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "true": true, "True": true, "TRUE": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "false": false, "False": false, "FALSE": false, "off": false, "Off": false, "OFF": false,
	"": nil, "~": nil, "null": nil, "Null": nil, "NULL": nil,
}

// resolvePlain resolves a plain scalar as yaml/v2's resolve does for an
// interface{} (timestamps stay strings); ok is false where it would need
// yaml/v2 itself (numbers beyond plain decimals, .inf, ...).
func resolvePlain(s string) (any, bool) {
	if v, ok := plainWords[s]; ok {
		return v, true
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
	default:
		return s, true // yaml/v2 resolves nothing else starting so
	}
	if n, ok := plainDecimal(s); ok {
		return n, true
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("0123456789+-._eExXoObBaAcCdDfFnNiI", rune(s[i])) {
			return s, true // cannot be a number
		}
	}
	var m map[string]any
	if err := yamlv2.Unmarshal([]byte("k: "+s), &m); err != nil || len(m) != 1 {
		return nil, false
	}
	return m["k"], true
}

// plainDecimal reads -?(0|[1-9][0-9]*) of up to 18 digits.
func plainDecimal(s string) (int, bool) {
	d := s
	if d[0] == '-' {
		d = d[1:]
	}
	if d == "" || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return 0, false
		}
		n = n*10 + int(d[i]-'0')
	}
	if s[0] == '-' {
		n = -n
	}
	return n, true
}

// DecodeFast is the fast reader alone: what Decode tries first, before
// go.yaml.in/yaml/v2's parser. ok is false when it declines doc. Tests
// hold it to yaml/v2 and measure how much of what templates render it
// takes.
func DecodeFast(doc string) (v any, ok bool) {
	var c unstructuredConverter
	return decodeFast(doc, &c)
}
