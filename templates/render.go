package templates

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// CompositionInfo is the Composition a render is for: .Composition in templates.
type CompositionInfo struct {
	// Name is the Composition's name (also .Release.Name).
	Name string
	// Namespace is the Composition's namespace (also .Release.Namespace).
	Namespace string
	// UID is the Composition's UID.
	UID string
	// Labels are the Composition's labels.
	Labels map[string]string
	// Annotations are the Composition's annotations.
	Annotations map[string]string
}

// Input is everything a render depends on besides the bundle.
type Input struct {
	// Values are the Composition's spec.values, merged over values.yaml.
	Values *apiextensionsv1.JSON
	// Composition identifies the Composition.
	Composition CompositionInfo
	// Capabilities describes the cluster; nil means DefaultCapabilities.
	Capabilities *Capabilities
	// IsUpgrade is .Release.IsUpgrade (and the opposite of .Release.IsInstall).
	IsUpgrade bool
	// Revision is .Release.Revision (1 when 0).
	Revision int
}

// Render renders the bundle for one Composition: values merged and
// validated, every templates/**/*.yaml executed in path order, documents
// split and parsed, kustomize run when the bundle has a kustomization.yaml.
// The result is deterministic: the same inputs give the same objects in
// the same order. Every error is a *RenderError naming the file and line or
// the values field path.
func Render(b *Bundle, in Input) ([]*unstructured.Unstructured, error) {
	values, err := MergeValues(b, in.Values)
	if err != nil {
		return nil, err
	}
	t, err := b.tmpl.Clone()
	if err != nil {
		return nil, &RenderError{Msg: err.Error(), Err: err}
	}
	st := &renderState{tmpl: t}
	// The parsed set already has every other function; bind the two that
	// need this render's state.
	t.Funcs(template.FuncMap{"include": st.include, "tpl": st.tpl})
	data := b.data(values, in)
	outputs := make(map[string]string, len(b.emitted))
	budget := MaxOutputBytes
	for _, name := range b.emitted {
		data["Template"] = TemplateInfo{Name: name, BasePath: "templates"}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&limitedWriter{w: &buf, n: budget}, name, data); err != nil {
			return nil, templateError(name, err)
		}
		budget -= buf.Len()
		outputs[name] = buf.String()
	}
	if _, ok := b.spec.Files[KustomizationFile]; ok {
		return b.kustomize(outputs)
	}
	var objs []*unstructured.Unstructured
	var sources []string
	for _, name := range b.emitted {
		docs, err := parseDocuments(name, outputs[name])
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
		for range docs {
			sources = append(sources, name)
		}
	}
	return objs, checkObjects(objs, sources)
}

// Render is the method form of the package-level Render.
func (b *Bundle) Render(in Input) ([]*unstructured.Unstructured, error) { return Render(b, in) }

// data builds the top-level objects templates see.
func (b *Bundle) data(values map[string]any, in Input) map[string]any {
	caps := in.Capabilities
	if caps == nil {
		caps = DefaultCapabilities()
	}
	rev := in.Revision
	if rev == 0 {
		rev = 1
	}
	return map[string]any{
		"Values":       values,
		"Composition":  in.Composition,
		"Bundle":       BundleInfo{Name: b.name, Revision: b.revision},
		"Release":      ReleaseInfo{Name: in.Composition.Name, Namespace: in.Composition.Namespace, Service: "stencil", IsInstall: !in.IsUpgrade, IsUpgrade: in.IsUpgrade, Revision: rev},
		"Chart":        chartInfo(b.chart),
		"Capabilities": caps,
		"Files":        b.files(),
	}
}

// BundleInfo is .Bundle in templates.
type BundleInfo struct {
	// Name is the Bundle's name.
	Name string
	// Revision is the Bundle's content hash.
	Revision string
}

// ReleaseInfo is Helm's .Release, filled from the Composition.
type ReleaseInfo struct {
	Name, Namespace, Service string
	IsInstall, IsUpgrade     bool
	Revision                 int
}

// TemplateInfo is Helm's .Template: the file being rendered.
type TemplateInfo struct {
	// Name is the template's path, such as templates/deployment.yaml.
	Name string
	// BasePath is "templates".
	BasePath string
}

// chartInfo exposes Chart.yaml as Helm does: keys with a capital initial
// (.Chart.Name, .Chart.Version, .Chart.AppVersion).
func chartInfo(chart map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range chart {
		if k != "" {
			out[strings.ToUpper(k[:1])+k[1:]] = v
		}
	}
	return out
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// parseDocuments splits one template's output into YAML documents, drops
// the empty ones and parses the rest.
func parseDocuments(file, out string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, d := range splitDocuments(out) {
		js, err := yaml.YAMLToJSON([]byte(d.text))
		if err != nil {
			line := d.line
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[1])
				line += n - 1
			}
			return nil, &RenderError{File: file, Line: line, Msg: "rendered output is not valid YAML (line of the output): " + err.Error(), Err: err}
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(js, &obj); err != nil {
			return nil, &RenderError{File: file, Line: d.line, Msg: "rendered document is not an object", Err: err}
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, &RenderError{File: file, Line: d.line, Msg: "rendered object needs apiVersion, kind and metadata.name"}
		}
		objs = append(objs, u)
	}
	return objs, nil
}

type document struct {
	text string
	line int // 1-based line of the output where the document starts
}

// splitDocuments splits at lines that are exactly "---" (as YAML streams).
func splitDocuments(out string) []document {
	var docs []document
	lines := strings.SplitAfter(out, "\n")
	start := 0
	flush := func(end int) {
		text := strings.Join(lines[start:end], "")
		if strings.TrimSpace(text) != "" {
			docs = append(docs, document{text: text, line: start + 1})
		}
	}
	for i, l := range lines {
		if t := strings.TrimRight(l, " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- ") {
			flush(i)
			start = i + 1
		}
	}
	flush(len(lines))
	return docs
}

// checkObjects enforces the object bound and refuses duplicates; sources
// names the file each object came from.
func checkObjects(objs []*unstructured.Unstructured, sources []string) error {
	if len(objs) > MaxObjects {
		return &RenderError{Msg: fmt.Sprintf("render produced %d objects, more than %d", len(objs), MaxObjects)}
	}
	seen := map[string]string{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		key := gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if first, ok := seen[key]; ok {
			return &RenderError{File: sources[i], Msg: fmt.Sprintf("%s %q is rendered twice (first by %s)", gvk.Kind, o.GetName(), first)}
		}
		seen[key] = sources[i]
	}
	return nil
}
