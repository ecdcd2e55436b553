package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the Prometheus text exposition format (what
// controller-runtime's /metrics serves), skipping comments.
func parseMetrics(r io.Reader) ([]sample, error) {
	var out []sample
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
func parseSample(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return s, fmt.Errorf("metric line %q: no value", line)
	} else {
		s.name, rest = line[:i], line[i:]
	}
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
			s.labels[strings.TrimSpace(k)] = v
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
	s.value = v
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

// metricSet is one scrape.
type metricSet []sample

// sum adds the values of the samples named name whose labels include match.
func (m metricSet) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// requests returns stencil_api_requests_total as requestCounts: the
// controller's own count of what it sent, for a cluster with no audit log.
func (m metricSet) requests() requestCounts {
	c := requestCounts{}
	for _, s := range m {
		if s.name == "stencil_api_requests_total" {
			c[s.labels["verb"]+" "+s.labels["resource"]] += int(s.value)
		}
	}
	return c
}

// minus returns c - base, entry by entry.
func (c requestCounts) minus(base requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// scrape reads the metrics endpoint at addr.
func scrape(ctx context.Context, addr string) (metricSet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", addr, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// byLabel returns, for the samples named name, the sum of their values by
// the value of label (samples without it are left out).
func (m metricSet) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if v, ok := s.labels[label]; ok && s.name == name {
			out[v] += s.value
		}
	}
	return out
}

// countsSince returns what the counters named name, by label, grew by from
// before to m (zero growths left out).
func (m metricSet) countsSince(before metricSet, name, label string) map[string]float64 {
	now, then := m.byLabel(name, label), before.byLabel(name, label)
	out := map[string]float64{}
	for k, v := range now {
		if d := v - then[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
