package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// scanned returns the entries of chart an index scan of text offers, in
// order.
func scanned(text, chart string) ([]indexEntry, error) {
	var got []indexEntry
	s := &indexScan{chart: chart, repo: "https://charts.example/", offer: func(e indexEntry) { got = append(got, e) }}
	err := s.scan(strings.NewReader(text))
	return got, err
}

// parsedWhole returns the entries of chart as a whole parse of text (as
// Helm reads an index: sigs.k8s.io/yaml) has them.
func parsedWhole(t *testing.T, text, chart string) []indexEntry {
	t.Helper()
	var idx struct {
		Entries map[string][]indexEntry `json:"entries"`
	}
	if err := yaml.Unmarshal([]byte(text), &idx); err != nil {
		t.Fatalf("the whole parse: %v", err)
	}
	return idx.Entries[chart]
}

// helmIndex is an index as `helm repo index` writes it (sigs.k8s.io/yaml
// of Helm's types): long descriptions folded onto more lines, charts
// sorted, the sequences at their keys' indentation.
func helmIndex(t *testing.T) string {
	t.Helper()
	long := strings.Repeat("a long description of the chart, ", 8)
	entry := func(chart, v string) map[string]any {
		return map[string]any{
			"apiVersion": "v2", "name": chart, "version": v, "appVersion": "1.25",
			"description": long, "digest": strings.Repeat("ab", 32),
			"urls":        []string{"charts/" + chart + "-" + v + ".tgz"},
			"annotations": map[string]string{"artifacthub.io/changes": "- kind: added\n  description: a\n  nginx:\n"},
			"keywords":    []string{"web", "nginx:"},
			"created":     "2024-01-02T03:04:05.123456789Z",
		}
	}
	entries := map[string]any{}
	for _, chart := range []string{"apache", "nginx", "nginx-ingress", "zookeeper"} {
		var versions []any
		for _, v := range []string{"1.0.0", "1.2.0", "2.0.0-rc.1", "1.10.3"} {
			versions = append(versions, entry(chart, v))
		}
		entries[chart] = versions
	}
	b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries, "generated": "2024-01-02T03:04:05Z",
		"annotations": map[string]string{"note": long}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIndexScanReadsAsAWholeParse: an index read line by line gives the
// chart's entries a whole parse gives, in every layout an index is
// written in.
func TestIndexScanReadsAsAWholeParse(t *testing.T) {
	helm := helmIndex(t)
	var whole map[string]any
	if err := yaml.Unmarshal([]byte(helm), &whole); err != nil {
		t.Fatal(err)
	}
	compact, _ := json.Marshal(whole)
	indented, _ := json.MarshalIndent(whole, "", "  ")
	for _, tc := range []struct{ name, text string }{
		{"as helm writes it", helm},
		{"with CRLF line ends", strings.ReplaceAll(helm, "\n", "\r\n")},
		{"with a byte order mark", "\xef\xbb\xbf" + helm},
		{"compact JSON", string(compact)},
		{"indented JSON", string(indented)},
		// As Ruby's Psych writes one (GitLab): a document marker, quoted
		// keys, comments and blank lines.
		{"quoted keys, comments, a marker", `---
# generated
apiVersion: v1
entries:

  # the web server
  'nginx':
  - version: 1.0.0
    urls: [charts/nginx-1.0.0.tgz]
    # a comment inside

    description: |
      nginx:
      - version: 9.9.9
  "apache":
  - version: 3.0.0
    urls: [charts/apache-3.0.0.tgz]
  nginx-ingress:
  - {version: 4.0.0, urls: [x]}
generated: "2024-01-02T03:04:05Z"
...
entries:
  nginx:
  - version: 8.8.8
`},
		{"sequences indented below their keys", `apiVersion: v1
entries:
    nginx:
        -   version: 1.2.0
            urls:
                - a.tgz
        -   version: 1.3.0
            urls: [b.tgz]
            digest: "00"
    other:
        - version: 7.0.0
`},
		{"flow sequences on the key's line", `entries:
  nginx: [{version: 1.0.0, urls: [a]}, {version: 2.0.0, urls: [b], digest: ff}]
  apache: []
`},
		{"entries as a flow mapping on one line", `entries: {nginx: [{version: 1.0.0, urls: [a]}], apache: []}
apiVersion: v1
`},
		{"no entries", "apiVersion: v1\nentries: {}\n"},
		{"an empty index", ""},
		{"a tab inside a block scalar", "entries:\n  nginx:\n  - version: 1.0.0\n    description: |\n      first\n      \tsecond\n    urls: [a]\n"},
		{"the chart absent", "entries:\n  apache:\n  - version: 1.0.0\n"},
		{"the chart with no versions", "entries:\n  nginx:\n  apache:\n  - version: 1.0.0\n"},
		{"entries last, another key's value folded", "generated: a long value\n  folded onto the next line\nentries:\n  nginx:\n  - version: 1.0.0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanned(tc.text, "nginx")
			if err != nil {
				t.Fatal(err)
			}
			want := parsedWhole(t, strings.TrimPrefix(tc.text, "\xef\xbb\xbf"), "nginx")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("entries of nginx (-whole parse +scan):\n%s", diff)
			}
		})
	}
}

// TestIndexScanRefuses: what the line-by-line reading cannot follow, and
// what is over its bounds, is refused with the repository, the line and
// the bound, never guessed; the index's text is never quoted.
func TestIndexScanRefuses(t *testing.T) {
	bigEntry := "entries:\n  nginx:\n  - version: 1.0.0\n    description: |\n" + strings.Repeat("      "+strings.Repeat("x", 1000)+"\n", MaxIndexEntrySize/1000)
	bomb := "entries:\n  nginx:\n  - version: 1.0.0\n    a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i := range 12 {
		name := fmt.Sprintf("b%d", i)
		bomb += fmt.Sprintf("    %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	bomb += "    urls: *" + prev + "\n"
	for _, tc := range []struct {
		name, text, reason, says string
	}{
		{"an entry over its bound", bigEntry, ReasonTooLarge, "line 3 is over the bound of 1 MiB (MaxIndexEntrySize)"},
		{"a line over the bound", "entries:\n  nginx:\n  - version: " + strings.Repeat("1", MaxIndexEntrySize+10) + "\n", ReasonInvalidChart, "line 3"},
		{"a JSON value over the bound", `{"entries": {"apache": [{"description": "` + strings.Repeat("x", 3*MaxIndexEntrySize) + `"}], "nginx": []}}`, ReasonTooLarge, "1 MiB (MaxIndexEntrySize)"},
		{"the chart listed twice", "entries:\n  nginx:\n  - version: 1.0.0\n  nginx:\n  - version: 9.0.0\n", ReasonInvalidChart, "line 4"},
		{"the chart listed twice in JSON", `{"entries": {"nginx": [], "nginx": [{"version": "9.0.0"}]}}`, ReasonInvalidChart, "twice"},
		{"entries over several lines of flow", "entries: {nginx: [\n  {version: 1.0.0}]}\n", ReasonInvalidChart, "line 1"},
		{"versions that are not a sequence", "entries:\n  nginx:\n    version: 1.0.0\n", ReasonInvalidChart, "line 3"},
		{"an entry that does not parse", "entries:\n  nginx:\n  - version: 1.0.0\n    urls: secret-text\n", ReasonInvalidChart, "line 3"},
		{"an alias bomb in the chart's entry", bomb, ReasonInvalidChart, "line 3"},
		{"a tab as indentation", "entries:\n\tnginx:\n", ReasonInvalidChart, "line 2"},
		{"not an index", "- a\n- b\n", ReasonInvalidChart, "line 1"},
		{"JSON that is not an index", `{"entries": [1, 2]}`, ReasonInvalidChart, "want"},
		{"truncated JSON", `{"entries": {"nginx": [{"version": "1.0`, ReasonInvalidChart, "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scanned(tc.text, "nginx")
			var serr *Error
			if !errors.As(err, &serr) || serr.Reason != tc.reason {
				t.Fatalf("scan: %v; want reason %s", err, tc.reason)
			}
			msg := err.Error()
			for _, want := range []string{"https://charts.example/", tc.says} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, "secret-text") || strings.Contains(msg, "xxxx") {
				t.Errorf("error %q quotes the index", msg)
			}
		})
	}
}
