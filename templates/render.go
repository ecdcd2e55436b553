package templates

import (
	"bytes"
	"strings"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
