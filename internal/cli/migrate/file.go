package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// file is one YAML file split into its documents, each kept as the
// bytes it was read as, so that a document no rewrite touches is written
// back byte for byte.
type file struct {
	path string
	docs []*document
}

// document is one YAML document of a file: the separator line that
// opens it ("" for the first, unless the file starts with ---), its
// body, and the line of the file the body starts on.
type document struct {
	sep  []byte
	body []byte
	line int
	// node is the parsed body (a DocumentNode); nil for a document of
	// only comments or blanks.
	node *kyaml.Node
	// edited is the new body when a rewrite changed the document.
	edited []byte
}

// splitDocuments splits data at its document separators: lines that are
// "---", optionally followed by blanks or a comment. A separator line
// with content after it ("--- {a: 1}") opens the document and stays in
// its body.
func splitDocuments(data []byte) []*document {
	var docs []*document
	cur := &document{line: 1}
	line := 1
	for rest := data; len(rest) > 0; line++ {
		end := bytes.IndexByte(rest, '\n')
		next := len(rest)
		if end >= 0 {
			next = end + 1
		}
		l := rest[:next]
		rest = rest[next:]
		if isSeparator(l) {
			docs = append(docs, cur)
			cur = &document{sep: l, line: line + 1}
			continue
		}
		cur.body = append(cur.body, l...)
	}
	docs = append(docs, cur)
	if len(docs[0].sep) == 0 && len(docs[0].body) == 0 && len(docs) > 1 {
		docs = docs[1:] // the file starts with ---
	}
	return docs
}

// isSeparator reports whether a line is a document separator of its
// own: "---" then nothing but blanks or a comment.
func isSeparator(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := strings.TrimSpace(string(l[3:]))
	return rest == "" || (strings.HasPrefix(rest, "#") && len(l) > 3 && (l[3] == ' ' || l[3] == '\t'))
}

// lineRE finds the line yaml.v3 names in an error.
var lineRE = regexp.MustCompile(`line (\d+)`)

// parseFile splits and parses data, the content of path; an error names
// the file and the line of the file (not of the document).
func parseFile(path string, data []byte) (*file, error) {
	f := &file{path: path, docs: splitDocuments(data)}
	for _, d := range f.docs {
		if err := d.parse(); err != nil {
			msg := lineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
				n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
				return fmt.Sprintf("line %d", n+d.line-1)
			})
			if !lineRE.MatchString(msg) {
				msg = fmt.Sprintf("document at line %d: %s", d.line, msg)
			}
			return nil, fmt.Errorf("%s: %s", path, msg)
		}
	}
	return f, nil
}

// parse parses the document's body, which must hold at most one YAML
// document.
func (d *document) parse() error {
	dec := kyaml.NewDecoder(bytes.NewReader(d.body))
	n := &kyaml.Node{}
	if err := dec.Decode(n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // only comments or blanks
		}
		return err
	}
	var extra kyaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			err = fmt.Errorf("line %d: a second document without a --- separator line", extra.Line)
		}
		return err
	}
	d.node = n
	return nil
}

// bytes is the file's new content: each document's separator and its
// edited body, or its body as read.
func (f *file) bytes() []byte {
	var out []byte
	for _, d := range f.docs {
		out = append(out, d.sep...)
		if d.edited != nil {
			out = append(out, d.edited...)
		} else {
			out = append(out, d.body...)
		}
	}
	return out
}

// changed reports whether any document of the file was edited.
func (f *file) changed() bool {
	for _, d := range f.docs {
		if d.edited != nil {
			return true
		}
	}
	return false
}

// encode writes the document's node back as YAML in the document's own
// indentation and sequence style (yaml.v3 keeps comments, key order,
// quoting and flow styles of the nodes).
func (d *document) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := kyaml.NewEncoderWithOptions(&buf, &kyaml.EncoderOptions{SeqIndent: kyaml.SequenceIndentStyle(kyaml.DeriveSeqIndentStyle(string(d.body)))})
	enc.SetIndent(indentOf(d.body))
	if err := enc.Encode(d.node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	enc2 := buf.String()
	if bytes.Contains(d.body, []byte("\r\n")) {
		enc2 = strings.ReplaceAll(enc2, "\n", "\r\n") // the file's own line ends
	}
	out := []byte(keepLineStyles(string(d.body), enc2))
	if !bytes.HasSuffix(d.body, []byte("\n")) {
		out = bytes.TrimSuffix(bytes.TrimSuffix(out, []byte("\n")), []byte("\r"))
	}
	return out, nil
}

// indentOf is the indentation width of a YAML body: how far the first
// nested mapping key sits right of the key it belongs to; 2 by default.
func indentOf(body []byte) int {
	lines := strings.Split(string(body), "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasSuffix(t, ":") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "- ") {
			continue
		}
		outer := len(l) - len(strings.TrimLeft(l, " "))
		for _, n := range lines[i+1:] {
			nt := strings.TrimSpace(n)
			if nt == "" || strings.HasPrefix(nt, "#") {
				continue
			}
			inner := len(n) - len(strings.TrimLeft(n, " "))
			if inner > outer && !strings.HasPrefix(nt, "- ") && inner-outer <= 8 {
				return inner - outer
			}
			break
		}
	}
	return 2
}
