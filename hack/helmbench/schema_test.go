package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

// TestInferredSchemas infers the values schema of each chart of Suite
// (package templates/schema/infer, as `stencil bundle schema` does) and
// puts it in the chart as its values.schema.json; then it must accept
// the chart's default values and every values file of the chart's ci/
// folder (and the values of Suite's cases), as a render validates them
// (templates.MergeValues: merged over values.yaml, checked as Helm
// checks values.schema.json), and the chart must publish a kind with it
// (publish.CRD: the schema converted to a structural CRD schema) whose
// schema takes the same files as instances' specs with nothing pruned
// (what `kubectl apply --server-side`, field validation Strict, would
// refuse) nor refused. It logs the figures.
func TestInferredSchemas(t *testing.T) {
	defer RemoveSuite()
	charts := 0
	total := map[string]*schemaFigures{}
	seen := map[string]bool{}
	for _, c := range Suite {
		key := c.Module.Path + "/" + c.Dir
		if seen[key] {
			continue // a second case of a chart: its values are the first's (valuesCases)
		}
		seen[key] = true
		t.Run(c.Name, func(t *testing.T) {
			charts++
			for kind, got := range inferredSchemaCase(t, c) {
				if total[kind] == nil {
					total[kind] = &schemaFigures{}
				}
				total[kind].files += got.files
				total[kind].helm += got.helm
				total[kind].crd += got.crd
			}
		})
	}
	var parts []string
	for _, kind := range []string{"defaults", "the suite's values", "CI files"} {
		if f := total[kind]; f != nil {
			parts = append(parts, fmt.Sprintf("%s %d of %d (the CRD %d)", kind, f.helm, f.files, f.crd))
		}
	}
	t.Logf("%d charts: accepted by the inferred values.schema.json: %s; %d refused for a value no template reads or of another type (knownRefusals)",
		charts, strings.Join(parts, ", "), len(knownRefusals))
}

// schemaFigures count values files, and those the inferred schema and
// the CRD accepted.
type schemaFigures struct{ files, helm, crd int }

// valuesKind names what a values file of valuesCases is.
func valuesKind(name string) string {
	switch {
	case name == "values.yaml":
		return "defaults"
	case strings.HasPrefix(name, "Suite "):
		return "the suite's values"
	}
	return "CI files"
}

// inferredSchemaCase checks chart c's inferred schema and returns how
// many values files of each kind (valuesKind) it took.
func inferredSchemaCase(t *testing.T, c SuiteChart) map[string]schemaFigures {
	t.Helper()
	dir, err := SuiteDir(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := suiteLoad(c, dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := infer.Bundle(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Incomplete {
		t.Errorf("the walk stopped at a bound: %v", r.Notes)
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	withSchema, instance := inferredChecks(t, b, js)
	checkClosedRoot(t, c, withSchema, instance)
	figures := map[string]schemaFigures{}
	for _, v := range valuesCases(t, c, dir, b.Spec().Files[templates.ValuesFile]) {
		got := figures[valuesKind(v.name)]
		got.files++
		want, refused := knownRefusals[c.Name+" "+v.name]
		_, err := templates.MergeValues(withSchema, &apiextensionsv1.JSON{Raw: v.json})
		switch {
		case err == nil:
			got.helm++
		case !refused || !strings.Contains(err.Error(), "values."+want):
			t.Errorf("%s: refused by the inferred values.schema.json: %v", v.name, err)
		}
		problems := strings.Join(instance.check(v.json), "; ")
		switch {
		case problems == "":
			got.crd++
		case !refused || !strings.Contains(problems, want):
			t.Errorf("%s: refused by the published kind's CRD: %s", v.name, problems)
		}
		if refused && (err == nil || problems == "") {
			t.Errorf("%s: accepted, but knownRefusals says it refuses %s", v.name, want)
		}
		figures[valuesKind(v.name)] = got
	}
	t.Logf("schema %d bytes, %d of %d objects closed; %d notes", len(js), closedObjects(r.Schema), objects(r.Schema), len(r.Notes))
	return figures
}

// inferredChecks returns b with js as its values.schema.json, and the
// checker of the spec schema of the kind it would publish with it
// (publish.CRD, which fails unless js converts to a structural schema).
func inferredChecks(t *testing.T, b *templates.Bundle, js []byte) (*templates.Bundle, *instanceChecker) {
	t.Helper()
	spec := b.Spec()
	spec.Files[templates.SchemaFileJSON] = string(js)
	withSchema, err := templates.LoadObject(&v1alpha1.Bundle{Spec: spec})
	if err != nil {
		t.Fatalf("the chart with its inferred schema does not load: %v", err)
	}
	spec.API = &v1alpha1.BundleAPI{Group: "charts.example.com", Kind: "Chart", Version: "v1"}
	crd, err := publish.CRD("chart", spec)
	if err != nil {
		t.Fatalf("the inferred schema is no CRD's: %v", err)
	}
	crdSchema, err := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"])
	if err != nil {
		t.Fatal(err)
	}
	instance, err := newInstanceChecker(crdSchema)
	if err != nil {
		t.Fatalf("the CRD's spec schema: %v", err)
	}
	return withSchema, instance
}

// checkClosedRoot checks that the schema is closed at the top (values.yaml
// is concrete there): a key no values.yaml sets nor template reads is
// refused, by values.schema.json and by the CRD; but for openRoots.
func checkClosedRoot(t *testing.T, c SuiteChart, withSchema *templates.Bundle, instance *instanceChecker) {
	t.Helper()
	typo := []byte(`{"notAValueOfThisChart": 1}`)
	_, err := templates.MergeValues(withSchema, &apiextensionsv1.JSON{Raw: typo})
	crdRefuses := len(instance.check(typo)) > 0
	if why, open := openRoots[c.Name]; open {
		if err != nil || crdRefuses {
			t.Errorf("an unknown top-level key: %v (CRD refuses: %v), want it accepted (openRoots: %s)", err, crdRefuses, why)
		}
	} else if err == nil || !strings.Contains(err.Error(), "notAValueOfThisChart") || !crdRefuses {
		t.Errorf("an unknown top-level key: %v (CRD refuses: %v), want it refused by values.schema.json and the CRD", err, crdRefuses)
	}
}

// openRoots are the charts whose values the inferred schema leaves open
// at the top, and why.
var openRoots = map[string]string{
	"istiod": "templates/configmap-values.yaml writes all of .Values out (toPrettyJson), for the injector's templates to read",
}

// knownRefusals are the values files of the suite an inferred schema
// refuses, by chart and file, with the path the refusal names: each a
// value no template reads, or of a type values.yaml does not give.
var knownRefusals = map[string]string{
	// The chart reads webhooksCleanup.enabled: a misspelling in the CI file.
	"kyverno ci/hooks-values.yaml": "webhooksCleanup.enable",
	// No template reads a top-level networkPolicy (each controller has its own).
	"kyverno ci/networkpolicy-values.yaml": "networkPolicy",
	// A number where values.yaml (and Grafana) has a string.
	"kube-prometheus-stack ci/03-non-defaults-values.yaml": "grafana.sidecar.datasources.alertmanager.name",
	// Read only by the text of another CI value (serviceMonitor.targets[].url)
	// given to tpl: no template names it.
	"prometheus-blackbox-exporter ci/service-monitor-tpl-values.yaml": "myDomain",
	// No template reads it (KEDA's settings are per component).
	"loki ci/keda-querier-values.yaml": "loki.kedaAutoscaling",
	// A component the chart no longer has (and memcached.replicas, which
	// no template reads either).
	"loki ci/non-default-values.yaml": "bloomCompactor",
}

// objects counts the object schemas of s; closedObjects those closed
// (additionalProperties false).
func objects(s any) int { return countObjects(s, false) }

func closedObjects(s any) int { return countObjects(s, true) }

func countObjects(s any, closed bool) int {
	m, ok := s.(map[string]any)
	if !ok {
		return 0
	}
	n := 0
	if m["type"] == "object" && (!closed || m["additionalProperties"] == false) {
		n++
	}
	props, _ := m["properties"].(map[string]any)
	for _, p := range props {
		n += countObjects(p, closed)
	}
	n += countObjects(m["items"], closed)
	n += countObjects(m["additionalProperties"], closed)
	return n
}

type valuesCase struct {
	name string
	json []byte
}

// valuesCases are the chart's values.yaml, the values of every case of
// Suite for it, and its ci/*.yaml files.
func valuesCases(t *testing.T, c SuiteChart, dir, defaults string) []valuesCase {
	t.Helper()
	texts := map[string]string{"values.yaml": defaults}
	for _, s := range Suite {
		if s.Module.Path == c.Module.Path && s.Dir == c.Dir && s.Values != "" {
			texts["Suite "+s.Name] = s.Values
		}
	}
	for _, pattern := range []string{"ci/*.yaml", "ci/*.yml"} {
		paths, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(dir, p)
			texts[filepath.ToSlash(rel)] = string(data)
		}
	}
	var out []valuesCase
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range texts {
			if !yield(k) {
				return
			}
		}
	}) {
		js, err := yaml.YAMLToJSON([]byte(texts[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(js) == "null" {
			js = []byte("{}")
		}
		out = append(out, valuesCase{name: name, json: js})
	}
	return out
}

// instanceChecker checks an instance's spec as the API server does a
// custom resource's with field validation Strict: unknown fields (which
// it would prune) refused, nulls of non-nullable fields dropped, then
// defaulted and validated.
type instanceChecker struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

func newInstanceChecker(raw []byte) (*instanceChecker, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &v1); err != nil {
		return nil, err
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, err
	}
	v, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, err
	}
	return &instanceChecker{structural: s, validator: v}, nil
}

// check returns the problems of spec js: its unknown fields and its
// violations.
func (c *instanceChecker) check(js []byte) []string {
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, p := range pruning.PruneWithOptions(obj, c.structural, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, fmt.Sprintf("unknown field %q", p))
	}
	defaulting.PruneNonNullableNullsWithoutDefaults(obj, c.structural)
	defaulting.Default(obj, c.structural)
	for _, e := range validation.ValidateCustomResource(nil, obj, c.validator) {
		problems = append(problems, e.Error())
	}
	return problems
}
