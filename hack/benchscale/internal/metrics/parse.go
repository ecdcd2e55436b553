package metrics

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Sample is one line of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scrape reads the metrics endpoint at addr (host:port, plain HTTP).
func Scrape(ctx context.Context, addr string) (Set, error) {
	return Get(ctx, http.DefaultClient, "http://"+addr+"/metrics")
}

// Get reads the metrics at url with hc: the API server's /metrics, say,
// with a client of rest.HTTPClientFor.
func Get(ctx context.Context, hc *http.Client, url string) (Set, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	// Read to the end, or given up on with parse's error: closing loses
	// nothing.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", req.URL.Redacted(), resp.Status)
	}
	return parse(resp.Body)
}

// parse reads the Prometheus text exposition format (what
// controller-runtime's /metrics serves), skipping comments.
func parse(r io.Reader) (Set, error) {
	var out Set
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseSample parses `name{k="v",...} value [timestamp]`.
func parseSample(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("metric line %q: no value", line)
	}
	s.Name = line[:i]
	rest := line[i:]
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			k, after, ok := strings.Cut(rest, "=")
			if !ok || !strings.HasPrefix(after, `"`) {
				return s, fmt.Errorf("metric line %q: bad label", line)
			}
			v, n, err := quoted(after)
			if err != nil {
				return s, fmt.Errorf("metric line %q: %w", line, err)
			}
			s.Labels[strings.TrimSpace(k)] = v
			rest = after[n:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("metric line %q: no value", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("metric line %q: %w", line, err)
	}
	s.Value = v
	return s, nil
}

// quoted reads a double-quoted label value with \\, \" and \n escapes from
// the start of s, returning it and the bytes consumed.
func quoted(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("unterminated escape")
			}
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated label value")
}
