package source

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
)

// Bounds of a chart repository's index.yaml. The index is hostile input
// like the chart (a repository's owner writes it), and public ones are
// large (tens of MiB), so it is never parsed whole: it is read as a
// stream, bounded in bytes (MaxIndexSize), and only the entries of the
// chart the Bundle names are parsed, one version at a time, each bounded
// (MaxIndexEntrySize). What a resolve holds in memory is then one entry
// and the best one so far, whatever the index's size; a whole parse of a
// 27 MiB index (Bitnami's) took 640 MiB of heap.
const (
	// MaxIndexSize bounds a chart repository's index.yaml as read: 64 MiB,
	// room for the largest public repositories' (Flux's default bound is
	// 50 MiB). It bounds the time a resolve takes, not its memory.
	MaxIndexSize = 64 << 20
	// MaxIndexEntrySize bounds one version's entry of the chart resolved
	// (its YAML lines, or its JSON value), and one line of the index:
	// 1 MiB, room for Artifact Hub's annotations many times over.
	MaxIndexEntrySize = 1 << 20
)

// indexEntry is one version of a chart in an index: the part a pull reads.
type indexEntry struct {
	Version string   `json:"version" yaml:"version"`
	URLs    []string `json:"urls" yaml:"urls"`
	Digest  string   `json:"digest" yaml:"digest"`
}

// resolve reads the index at base and returns the newest entry of chart
// whose version matches constraint (an exact version or a range; the
// newest stable version when empty).
func resolve(ctx context.Context, client *http.Client, base *url.URL, chart, constraint string) (*indexEntry, error) {
	p := picker{}
	if constraint != "" {
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return nil, fail(ReasonInvalidSource, nil, "spec.source.chartRepository.version: not a version or a range")
		}
		p.constraint = c
	}
	idxURL := base.ResolveReference(&url.URL{Path: "index.yaml"})
	body, err := open(ctx, client, idxURL, MaxIndexSize, "the index.yaml of chart repository "+base.Redacted())
	if err != nil {
		return nil, err
	}
	// Read only: the scan checks what it read; Close adds nothing.
	defer func() { _ = body.Close() }()
	s := &indexScan{chart: chart, repo: base.Redacted(), offer: p.offer}
	if err := s.scan(body); err != nil {
		return nil, err
	}
	switch {
	case p.best != nil:
		return p.best, nil
	case s.entries == 0:
		return nil, fail(ReasonNotFound, nil, "chart %s is not in %s", chart, idxURL.Redacted())
	default:
		return nil, fail(ReasonNotFound, nil, "no version of chart %s in %s matches %q", chart, idxURL.Redacted(), constraint)
	}
}

// picker keeps the newest entry whose version matches constraint (the
// newest stable one when constraint is nil). An entry whose version is
// not a semantic version is skipped, as Helm skips it.
type picker struct {
	constraint *semver.Constraints
	best       *indexEntry
	bestV      *semver.Version
}

func (p *picker) offer(e indexEntry) {
	v, err := semver.NewVersion(e.Version)
	if err != nil {
		return
	}
	if p.constraint == nil && v.Prerelease() != "" || p.constraint != nil && !p.constraint.Check(v) {
		return
	}
	if p.bestV == nil || v.GreaterThan(p.bestV) {
		p.best, p.bestV = &e, v
	}
}

// indexScan reads an index for one chart's entries, calling offer with
// each; entries counts them.
type indexScan struct {
	chart, repo string
	offer       func(indexEntry)
	entries     int
	// leading counts the blank lines before the index's first byte.
	leading int
}

// scan reads an index as YAML (as `helm repo index` writes it: block
// style) or as JSON (`helm repo index --json`), by its first byte.
func (s *indexScan) scan(r io.Reader) error {
	br := bufio.NewReaderSize(r, MaxIndexEntrySize+1)
	for {
		b, err := br.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // an empty index lists nothing
			}
			return s.readError(err)
		}
		switch b[0] {
		case '\n':
			s.leading++
			fallthrough
		case ' ', '\t', '\r':
			_, _ = br.ReadByte()
			continue
		case '{':
			return s.scanJSON(br)
		}
		if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
			_, _ = br.Discard(3)
			continue
		}
		return s.scanYAML(br)
	}
}

// readError is err, an error reading the index: the bound's *Error as it
// is, any other a failed pull.
func (s *indexScan) readError(err error) error {
	var serr *Error
	if errors.As(err, &serr) {
		return serr
	}
	return remoteError(err, "read the index.yaml of %s", s.repo)
}

// invalid is the error of an index that does not read as one, at line
// (0: no line); it never quotes the index.
func (s *indexScan) invalid(line int, format string, args ...any) error {
	at := ""
	if line > 0 {
		at = fmt.Sprintf(" line %d", line)
	}
	return fail(ReasonInvalidChart, nil, "the index.yaml of chart repository %s does not read as a chart repository index%s (reading chart %s's entries): %s", s.repo, at, s.chart, fmt.Sprintf(format, args...))
}

// tooLarge is the error of one entry of the chart over MaxIndexEntrySize.
func (s *indexScan) tooLarge(line int) error {
	return fail(ReasonTooLarge, nil, "the index.yaml of chart repository %s: the entry of chart %s at line %d is over the bound of %s (MaxIndexEntrySize)", s.repo, s.chart, line, sizeOf(MaxIndexEntrySize))
}

// take parses data, the YAML lines of one entry of the chart (a sequence
// of one item), from line, and offers it.
func (s *indexScan) take(line int, data []byte) error {
	var e []indexEntry
	if err := yaml.Unmarshal(data, &e); err != nil || len(e) != 1 {
		return s.invalid(line, "an entry of the chart does not parse")
	}
	s.entries++
	s.offer(e[0])
	return nil
}

// scanJSON reads a JSON index token by token: the chart's entries are
// decoded one at a time, everything else is skipped unkept. No token or
// entry may hold more than MaxIndexEntrySize of the decoder's buffer.
func (s *indexScan) scanJSON(r io.Reader) error {
	g := &jsonBound{r: r, repo: s.repo}
	dec := json.NewDecoder(g)
	g.dec = dec
	if err := s.delim(dec, '{'); err != nil {
		return err
	}
	seen := false
	for dec.More() {
		key, err := s.key(dec)
		if err != nil {
			return err
		}
		if key != "entries" {
			if err := s.skip(dec); err != nil {
				return err
			}
			continue
		}
		if err := s.jsonCharts(dec, &seen); err != nil {
			return err
		}
	}
	return s.delim(dec, '}')
}

// jsonCharts reads the object of entries by chart name: the chart's are
// decoded, the others' skipped. *seen is whether the chart was met
// before, in this object or an earlier one.
func (s *indexScan) jsonCharts(dec *json.Decoder, seen *bool) error {
	if err := s.delim(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		chart, err := s.key(dec)
		if err != nil {
			return err
		}
		if chart != s.chart {
			if err := s.skip(dec); err != nil {
				return err
			}
			continue
		}
		if *seen {
			return s.invalid(0, "the chart is listed twice")
		}
		*seen = true
		if err := s.jsonEntries(dec); err != nil {
			return err
		}
	}
	return s.delim(dec, '}')
}

// jsonEntries decodes the chart's array of entries, one at a time.
func (s *indexScan) jsonEntries(dec *json.Decoder) error {
	if err := s.delim(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		var e indexEntry
		if err := dec.Decode(&e); err != nil {
			return s.jsonError(err, "an entry of the chart does not parse")
		}
		s.entries++
		s.offer(e)
	}
	return s.delim(dec, ']')
}

// delim reads the delimiter want.
func (s *indexScan) delim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return s.jsonError(err, "the JSON does not parse")
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return s.invalid(0, "want %q in the JSON", string(want))
	}
	return nil
}

// key reads an object's key.
func (s *indexScan) key(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", s.jsonError(err, "the JSON does not parse")
	}
	k, ok := tok.(string)
	if !ok {
		return "", s.invalid(0, "want an object's key in the JSON")
	}
	return k, nil
}

// skip reads one value, unkept.
func (s *indexScan) skip(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return s.jsonError(err, "the JSON does not parse")
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// jsonError is err of the decoder: a read error (the bounds') as it is,
// else the index is invalid (what the decoder says quotes the index).
func (s *indexScan) jsonError(err error, what string) error {
	var serr *Error
	if errors.As(err, &serr) {
		return serr
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return s.invalid(0, "%s", what)
	}
	return s.readError(err)
}

// jsonBound is the reader of a JSON index's decoder: it refuses to read
// when the decoder holds more than MaxIndexEntrySize it has not yet
// consumed (one token or one entry being read).
type jsonBound struct {
	r    io.Reader
	repo string
	dec  *json.Decoder
	read int64
}

func (g *jsonBound) Read(p []byte) (int, error) {
	if g.read-g.dec.InputOffset() > MaxIndexEntrySize {
		return 0, fail(ReasonTooLarge, nil, "the index.yaml of chart repository %s: a value is over the bound of %s (MaxIndexEntrySize)", g.repo, sizeOf(MaxIndexEntrySize))
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}
