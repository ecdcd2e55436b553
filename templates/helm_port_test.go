package templates_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/templates"
)

// The helm-port chart (testdata/helm-port) is written for this test: a
// .helmignore, a draft-07 values.schema.json with definitions, $ref, a
// type list with null, oneOf, additionalProperties and a default, missing
// keys in a file, in tpl and in include, .Files and its Glob, Lines,
// AsConfig and AsSecrets, and numbers. Its reference outputs are Helm's
// own, made with Helm v4.3.1's code (helm.sh/helm/v4@v4.3.1:
// pkg/chart/v2/loader.Load, pkg/chart/common/util.
// ToRenderValuesWithSchemaValidation with release web in shop and
// common.DefaultCapabilities, pkg/engine.Render), each template's output
// printed in path order under a "# chart/templates/NAME" line:
//
//	testdata/helm-port.helm.yaml             the rendered templates
//	testdata/helm-port-bad-values.helm.txt   the schema error with
//	                                         helm-port-bad-values.yaml

// TestHelmPortChart: stencil renders the chart's objects exactly as Helm
// does, but for the numbers (the one deliberate difference, docs/helm.md).
func TestHelmPortChart(t *testing.T) {
	b, err := templates.Load(os.DirFS(filepath.Join("testdata", "helm-port")), templates.LoadOptions{Name: "helm-port"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: templates.CompositionInfo{Name: "web", Namespace: "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, o := range objs {
		got = append(got, o.Object)
	}
	helm, err := os.ReadFile(filepath.Join("testdata", "helm-port.helm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	// Each file's output follows its "# helm-port/templates/..." line.
	docs := regexp.MustCompile(`(?m)^(---|# helm-port/templates/.*)$`).Split(string(helm), -1)
	for _, doc := range docs {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			want = append(want, m)
		}
	}
	// Helm's values are float64 (pkg/chart/v2/loader/load.go LoadValues):
	// it prints 1000000 as 1e+06 and rounds 2^53+1. stencil keeps them.
	numbers := want[len(want)-1]["data"].(map[string]any)
	numbers["million"], numbers["huge"] = "1000000", "9007199254740993"
	numbers["toJson"] = strings.Replace(numbers["toJson"].(string), "9007199254740992", "9007199254740993", 1)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stencil's objects differ from Helm's (-helm +stencil):\n%s", diff)
	}
}

// TestHelmPortChartSchema: values breaking the chart's schema fail where
// Helm's fail: every location Helm reports is a violation's path (or, for
// a missing or extra property, its parent's), and stencil reports no
// other place.
func TestHelmPortChartSchema(t *testing.T) {
	b, err := templates.Load(os.DirFS(filepath.Join("testdata", "helm-port")), templates.LoadOptions{Name: "helm-port"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := os.ReadFile(filepath.Join("testdata", "helm-port-bad-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(bad)
	if err != nil {
		t.Fatal(err)
	}
	_, err = templates.Render(b, templates.Input{Values: values(string(js)), Composition: web})
	var re *templates.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a RenderError", err)
	}
	var paths []string
	for v := range strings.SplitSeq(re.Msg, "; ") {
		p, _, _ := strings.Cut(v, ": ")
		paths = append(paths, p)
	}
	want := []string{"values.extra.greeting", "values.image.pullPolicy", "values.image.repository", "values.image.tag",
		"values.ports[1]", "values.service.port", "values.sizes.small", "values.unknown"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("violations (-want +got):\n%s\nmessage: %s", diff, re.Msg)
	}

	helmErr, err := os.ReadFile(filepath.Join("testdata", "helm-port-bad-values.helm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	at := regexp.MustCompile(`at '([^']*)'`)
	for _, m := range at.FindAllStringSubmatch(string(helmErr), -1) {
		loc := fieldPath(m[1])
		if !slices.ContainsFunc(paths, func(p string) bool { return p == loc || strings.HasPrefix(p, loc+".") }) {
			t.Errorf("Helm reports %q (%s); stencil reports no violation there", m[1], loc)
		}
	}
	for _, p := range paths {
		if !slices.ContainsFunc(at.FindAllStringSubmatch(string(helmErr), -1), func(m []string) bool {
			loc := fieldPath(m[1])
			return p == loc || strings.HasPrefix(p, loc+".") && loc != "values"
		}) && p != "values.unknown" { // Helm: at '': additional properties 'unknown'
			t.Errorf("stencil reports %s, Helm does not", p)
		}
	}
}

// fieldPath turns a JSON pointer of this chart's values into stencil's
// field path (a number is a list index in these values).
func fieldPath(ptr string) string {
	p := "values"
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		if _, err := strconv.Atoi(tok); err == nil {
			p += "[" + tok + "]"
		} else {
			p += "." + tok
		}
	}
	return p
}
