package bundle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/publish/conversion"
	"github.com/stencil-dev/stencil/templates"
)

// examplesDir is the folder of a bundle whose YAML files are its
// examples: instances of the kind it publishes, in any version, that
// lint converts to every other version and back.
const examplesDir = "examples/"

// samplesPerVersion is how many values lint generates from each
// version's schema for its round trips.
const samplesPerVersion = 8

// roundTripper is what a round trip needs of a converter
// (*conversion.Converter).
type roundTripper interface {
	RoundTrip(obj map[string]any, via string) (lost []string, err error)
	AnnotatedFields(obj map[string]any, to string) ([]string, error)
}

// roundTripCase is one instance a round trip starts from.
type roundTripCase struct {
	label string
	obj   map[string]any
}

// lintRoundTrips checks the conversions of a kind published in several
// versions: the rules compile, and every example (the bundle's
// examples/*.yaml and the -f files that are instances of the kind) and
// values generated from each version's schema come back unchanged when
// converted to every other served version and back. It prints each
// problem (the version pair and the field path lost) and returns their
// number.
func lintRoundTrips(dir string, b *templates.Bundle, files []string, out io.Writer) int {
	spec := b.Spec()
	if spec.API == nil || len(spec.API.Versions) == 0 {
		return 0
	}
	if _, err := publish.CRD(b.Name(), spec); err != nil {
		return 0 // lintAPI reported the api's problems
	}
	report := func(format string, args ...any) {
		fmt.Fprintf(out, "%s (conversion): %s\n", dir, fmt.Sprintf(format, args...))
	}
	conv, err := publish.Converter(b.Name(), spec)
	if err != nil {
		return reportConverterError(err, report)
	}
	schemas, err := publish.VersionSchemas(b.Name(), spec)
	if err != nil {
		report("%v", err)
		return 1
	}
	api := publish.Defaulted(*spec.API)
	cases, problems := roundTripExamples(b, files, api, report)
	for _, v := range publish.Versions(api) {
		for i, s := range conversion.Samples(schemas[v.Name], samplesPerVersion) {
			obj := map[string]any{
				"apiVersion": api.Group + "/" + v.Name, "kind": api.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("sample-%d", i)},
				"spec":     s,
			}
			cases = append(cases, roundTripCase{fmt.Sprintf("values generated from %s's schema #%d", v.Name, i+1), obj})
		}
	}
	seen := map[string]bool{}
	for _, c := range cases {
		problems += roundTrip(conv, api, c, seen, report)
	}
	if problems == 0 {
		fmt.Fprintf(out, "%s (conversion): %d round trips between %d versions ok\n", dir, len(cases), len(publish.Versions(api)))
	}
	return problems
}

// reportConverterError reports the problems of conversion rules that do
// not compile, each with its field path as the folder holds it, and
// returns their number.
func reportConverterError(err error, report func(string, ...any)) int {
	var pe *publish.Error
	if !errors.As(err, &pe) || len(pe.Errs) == 0 {
		report("%v", err)
		return 1
	}
	for _, line := range folderProblems(pe) {
		report("%s", line)
	}
	return len(pe.Errs)
}

// roundTrip converts c to every other served version and back and
// reports each field lost once per version pair; it returns how many it
// reported.
func roundTrip(conv roundTripper, api v1alpha1.BundleAPI, c roundTripCase, seen map[string]bool, report func(string, ...any)) int {
	from := (&unstructured.Unstructured{Object: c.obj}).GroupVersionKind().Version
	problems := 0
	for _, v := range publish.Versions(api) {
		if v.Name == from || (v.Served != nil && !*v.Served) {
			continue
		}
		pair := from + " → " + v.Name + " → " + from
		lost, err := conv.RoundTrip(c.obj, v.Name)
		if err != nil {
			report("%s: %s: %v", pair, c.label, err)
			problems++
			continue
		}
		for _, p := range lost {
			if key := pair + " " + p; !seen[key] {
				seen[key] = true
				report("%s: %s: loses %s", pair, c.label, p)
				problems++
			}
		}
		warnAnnotated(conv, c, from, v.Name, seen, report)
	}
	return problems
}

// warnAnnotated warns, once per version pair and field, of the fields of
// c that converting it to the version to keeps only in the conversion
// annotation: a round trip restores them, but to (and the templates, when
// it is the render version) never sees them. A warning is no problem.
func warnAnnotated(conv roundTripper, c roundTripCase, from, to string, seen map[string]bool, report func(string, ...any)) {
	kept, err := conv.AnnotatedFields(c.obj, to)
	if err != nil {
		return // RoundTrip reported the conversion's error
	}
	for _, p := range kept {
		if key := from + " → " + to + " " + p; !seen[key] {
			seen[key] = true
			report("warning: %s → %s: %s: %s is kept only in the annotation %s%s: %s never sees it", from, to, c.label, p, conversion.AnnotationPrefix, from, to)
		}
	}
}

// roundTripExamples reads the examples: the bundle's examples/*.yaml
// files and the -f files, every document that is an instance of the
// published kind in a version the api lists. A file that does not parse
// is a problem.
func roundTripExamples(b *templates.Bundle, files []string, api v1alpha1.BundleAPI, report func(string, ...any)) ([]roundTripCase, int) {
	type source struct {
		name string
		data []byte
	}
	var sources []source
	var names []string
	for name := range b.Spec().Files {
		if strings.HasPrefix(name, examplesDir) && (path.Ext(name) == ".yaml" || path.Ext(name) == ".yml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		sources = append(sources, source{name, []byte(b.Spec().Files[name])})
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err == nil {
			sources = append(sources, source{name, data})
		}
	}
	versions := map[string]bool{}
	for _, v := range publish.Versions(api) {
		versions[api.Group+"/"+v.Name] = true
	}
	var cases []roundTripCase
	problems := 0
	for _, s := range sources {
		objs, err := instancesOf(s.data, api.Kind, versions)
		if err != nil {
			report("%s: %v", s.name, err)
			problems++
			continue
		}
		for _, o := range objs {
			u := unstructured.Unstructured{Object: o}
			cases = append(cases, roundTripCase{fmt.Sprintf("%s %s %s", s.name, u.GetKind(), u.GetName()), o})
		}
	}
	return cases, problems
}

// instancesOf returns the documents of data that are instances of kind
// in one of the apiVersions.
func instancesOf(data []byte, kind string, apiVersions map[string]bool) ([]map[string]any, error) {
	var out []map[string]any
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		var obj map[string]any
		js, err := yaml.YAMLToJSON(doc)
		if err == nil {
			err = utiljson.Unmarshal(js, &obj)
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if v, _ := obj["apiVersion"].(string); apiVersions[v] && obj["kind"] == kind {
			out = append(out, obj)
		}
	}
}
