package source

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML index is read line by line, as block-style YAML is laid out:
// the top-level keys start in the first column; the charts of `entries:`
// are the keys at the first indentation below it; a chart's versions are
// the items (`- `) of the sequence below its key. A line more indented
// than a boundary belongs to what is above it (block scalars and flow
// scalars cannot go back out in block style), blank and comment lines
// are neither. So the chart's entries are found, and each parsed alone,
// without parsing anything else: the other charts' lines are only
// looked at, never kept. A key line, which may be quoted, is parsed on its own. What
// this reading cannot follow (a flow collection over several lines, a
// complex key, an alias to an anchor outside the entry, a tab as
// indentation) is refused with its line number, never guessed; `helm repo
// index` writes none of them.

// yamlScan is the state of scanYAML.
type yamlScan struct {
	*indexScan
	// line is the number of the line read last.
	line int
	// inEntries: the lines are under `entries:`; charts is the charts'
	// indentation there (-1 until the first is seen).
	inEntries bool
	charts    int
	// inChart: the lines are under the chart's key; items is the
	// indentation of its sequence's dashes (-1 until the first).
	inChart, seenChart, seenEntries bool
	items                           int
	// content: a line other than a blank line, a comment or a document
	// marker was read.
	content bool
	// item is the entry being read, from line itemLine.
	item     []byte
	itemLine int
}

// scanYAML reads a block-style YAML index from r, one line at a time
// (each at most MaxIndexEntrySize: r's buffer).
func (s *indexScan) scanYAML(r *bufio.Reader) error {
	y := &yamlScan{indexScan: s, charts: -1, items: -1, line: s.leading}
	for {
		raw, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return s.invalid(y.line+1, "a line over %s (MaxIndexEntrySize)", sizeOf(MaxIndexEntrySize))
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return s.readError(err)
		}
		if len(raw) > 0 {
			y.line++
			done, lerr := y.next(raw)
			if lerr != nil {
				return lerr
			}
			if done {
				break
			}
		}
		if err != nil {
			break
		}
	}
	return y.flush()
}

// next takes one line (with its line break); done is the end of the
// document (a `---` or `...` after content).
func (y *yamlScan) next(raw []byte) (done bool, err error) {
	text := bytes.TrimRight(raw, "\r\n")
	indent := len(text) - len(bytes.TrimLeft(text, " "))
	rest := text[indent:]
	neutral := len(bytes.TrimSpace(rest)) == 0 || rest[0] == '#'
	switch {
	case neutral:
		if y.item != nil {
			return false, y.add(raw)
		}
		return false, nil
	case rest[0] == '\t' && (indent == 0 || y.inEntries && indent <= max(y.charts, y.items)):
		// A tab where a key or an item would start; deeper, it is content.
		return false, y.invalid(y.line, "a tab as indentation")
	case indent == 0:
		return y.top(text)
	case !y.inEntries:
		return false, nil
	}
	if y.charts < 0 {
		y.charts = indent
	}
	switch {
	case indent < y.charts:
		return false, y.invalid(y.line, "the charts of entries are not aligned")
	case indent == y.charts && !dash(rest):
		return false, y.chartKey(rest)
	case !y.inChart:
		return false, nil
	}
	if y.items < 0 {
		if !dash(rest) {
			return false, y.invalid(y.line, "the chart's versions are not a sequence")
		}
		y.items = indent
	}
	switch {
	case indent < y.items:
		return false, y.invalid(y.line, "the chart's versions are not aligned")
	case indent == y.items && dash(rest):
		if err := y.flush(); err != nil {
			return false, err
		}
		y.item, y.itemLine = make([]byte, 0, len(raw)), y.line
	}
	return false, y.add(raw)
}

// dash reports whether rest (a line past its indentation) is a sequence
// item.
func dash(rest []byte) bool {
	return rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ')
}

// add appends raw to the entry being read, within MaxIndexEntrySize.
func (y *yamlScan) add(raw []byte) error {
	if len(y.item)+len(raw) > MaxIndexEntrySize {
		return y.tooLarge(y.itemLine)
	}
	y.item = append(y.item, raw...)
	return nil
}

// flush parses and offers the entry being read, if any.
func (y *yamlScan) flush() error {
	if y.item == nil {
		return nil
	}
	item, line := y.item, y.itemLine
	y.item = nil
	return y.take(line, item)
}

// top takes a line of the first column: a top-level key, or the end of
// the document.
func (y *yamlScan) top(text []byte) (done bool, err error) {
	if err := y.flush(); err != nil {
		return false, err
	}
	y.inEntries, y.inChart = false, false
	if marker(text) {
		if after := bytes.TrimSpace(text[3:]); len(after) > 0 && after[0] != '#' {
			return false, y.invalid(y.line, "a document marker with content")
		}
		// The end of the first document, which is the index.
		return y.content, nil
	}
	y.content = true
	value, ok, err := y.keyIs(text, "entries")
	if !ok || err != nil {
		return false, err
	}
	if y.seenEntries {
		return false, y.invalid(y.line, "entries is listed twice")
	}
	y.seenEntries = true
	if value == nil {
		y.inEntries = true
		return false, nil
	}
	if value.Kind != yaml.MappingNode {
		return false, y.invalid(y.line, "entries is not a mapping")
	}
	for i := 0; i+1 < len(value.Content); i += 2 {
		if value.Content[i].Value == y.chart {
			if err := y.chartValue(value.Content[i+1]); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// marker reports whether text is a document marker line (--- or ...).
func marker(text []byte) bool {
	return (bytes.HasPrefix(text, []byte("---")) || bytes.HasPrefix(text, []byte("..."))) &&
		(len(text) == 3 || text[3] == ' ' || text[3] == '\t')
}

// chartKey takes a line at the charts' indentation: a chart's key.
func (y *yamlScan) chartKey(rest []byte) error {
	if err := y.flush(); err != nil {
		return err
	}
	y.inChart = false
	value, ok, err := y.keyIs(rest, y.chart)
	if !ok || err != nil {
		return err
	}
	if y.seenChart {
		return y.invalid(y.line, "the chart is listed twice")
	}
	y.seenChart = true
	if value == nil {
		y.inChart, y.items = true, -1
		return nil
	}
	return y.chartValue(value)
}

// chartValue takes the chart's versions written on its key's line (a flow
// sequence).
func (y *yamlScan) chartValue(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return y.invalid(y.line, "the chart's versions are not a sequence")
	}
	for _, item := range n.Content {
		var e indexEntry
		if err := item.Decode(&e); err != nil {
			return y.invalid(y.line, "an entry of the chart does not parse")
		}
		y.entries++
		y.offer(e)
	}
	return nil
}

// keyIs reads line (past its indentation) as the key of a mapping and
// reports whether it is want; if so, value is what the line holds after
// the key (nil when the value is on the lines below). A plain key is read
// as it stands and the line parsed only when it is want (a long value of
// another key may go on over the next lines); any other key (quoted, an
// anchor, a tag) is parsed with its line, which must then be whole.
func (y *yamlScan) keyIs(line []byte, want string) (value *yaml.Node, ok bool, err error) {
	if key, plain := plainKey(line); plain {
		if key != want {
			return nil, false, nil
		}
		after := bytes.TrimSpace(line[len(key):])
		after = bytes.TrimSpace(after[1:]) // the colon
		if len(after) == 0 || after[0] == '#' {
			return nil, true, nil
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(line, &doc); err != nil || len(doc.Content) != 1 {
		return nil, false, y.invalid(y.line, "not a key of a mapping, or a collection over several lines")
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 || m.Content[0].Kind != yaml.ScalarNode {
		return nil, false, y.invalid(y.line, "not a key of a mapping, or a collection over several lines")
	}
	if m.Content[0].Value != want {
		return nil, false, nil
	}
	v := m.Content[1]
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "" {
		return nil, true, nil
	}
	return v, true, nil
}

// plainKey returns the key line starts with when it is a plain scalar
// (no quote, anchor, tag, alias or flow indicator) followed by ": " or a
// colon that ends the line.
func plainKey(line []byte) (string, bool) {
	if strings.IndexByte("\"'?&!*|>%@`{[,]}#:", line[0]) >= 0 {
		return "", false
	}
	for i := 0; i < len(line); i++ {
		if line[i] == ':' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t') {
			return string(bytes.TrimRight(line[:i], " \t")), true
		}
		if line[i] == '#' && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t') {
			return "", false
		}
	}
	return "", false
}
