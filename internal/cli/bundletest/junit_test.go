package bundletest_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/stencil-dev/stencil/internal/cli/bundletest"
	"github.com/stencil-dev/stencil/internal/cli/flags"
)

// TestJUnit: the JUnit XML of a run with passing and failing cases in
// two case files is testdata/junit.golden.xml (go test -update rewrites
// it), each case timed by the runner's clock; it parses back with the
// counts it declares, the failures' text escaped.
func TestJUnit(t *testing.T) {
	dir := demo(t, map[string]string{
		"a.yaml": `cases:
- name: replicas <&> "quoted"
  assert:
  - equal: {kind: Deployment, path: spec.replicas, value: 1}
- name: two failures
  assert:
  - equal: {kind: Deployment, path: spec.replicas, value: 2}
  - absent: {kind: Service}
`,
		"b.yaml": `cases:
- name: image
  assert:
  - match: {kind: Deployment, path: "spec.template.spec.containers[0].image", regex: '^nginx'}
`,
	})
	golden, err := filepath.Abs(filepath.Join("testdata", "junit.golden.xml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(dir))
	cs, err := bundletest.Load("demo")
	if err != nil {
		t.Fatal(err)
	}
	var render flags.Render
	render.Add(pflag.NewFlagSet("test", pflag.ContinueOnError))
	pool, err := render.Pool()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	clock := time.Unix(0, 0)
	r := &bundletest.Runner{Renderer: pool, Out: io.Discard, Notes: io.Discard, Now: func() time.Time {
		clock = clock.Add(125 * time.Millisecond)
		return clock
	}}
	results := []bundletest.Bundle{r.Run(context.Background(), cs)}
	var got bytes.Buffer
	if err := bundletest.WriteJUnit(&got, results); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("JUnit XML (-want +got):\n%s", diff)
	}

	var parsed struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(got.Bytes(), &parsed); err != nil {
		t.Fatalf("the JUnit XML does not parse: %v", err)
	}
	if parsed.Tests != 3 || parsed.Failures != 1 || len(parsed.Suites) != 2 || len(parsed.Suites[0].Cases) != 2 {
		t.Fatalf("parsed: %+v", parsed)
	}
	if name := parsed.Suites[0].Cases[0].Name; name != `replicas <&> "quoted"` {
		t.Errorf("case name parsed back as %q", name)
	}
	f := parsed.Suites[0].Cases[1].Failure
	wantText := "assert[0] equal: Deployment default/release-name: spec.replicas: expected 2, got 1\nassert[1] absent: kind=Service: expected no object, got Service default/release-name"
	if f == nil || f.Text != wantText || f.Message != "assert[0] equal: Deployment default/release-name: spec.replicas: expected 2, got 1" {
		t.Errorf("failure parsed back as %+v, want the text\n%s", f, wantText)
	}
}
