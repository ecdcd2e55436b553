package templates

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/manifest"
)

// CRDs returns the CustomResourceDefinitions of the crds/ folders of the
// charts a render with values uses (the root chart's, then each enabled
// subchart's: chart.CRDFiles), read as Helm reads them: never templated,
// each document a CustomResourceDefinition of apiextensions.k8s.io/v1. A
// Bundle whose crds policy (CRDPolicy) is Skip has none. Each call
// returns copies; a file is parsed once per Bundle. An error names the
// file and line.
func (b *Bundle) CRDs(values *apiextensionsv1.JSON) ([]*unstructured.Unstructured, error) {
	if b.crds == v1alpha1.CRDsSkip {
		return nil, nil
	}
	_, charts, err := b.mergeValues(values)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, p := range chart.CRDFiles(charts, b.sources) {
		objs, err := b.crdFile(p)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, o.DeepCopy())
		}
		if len(out) > MaxObjects {
			return nil, manifest.TooManyObjects(p, 0, len(out))
		}
	}
	return out, nil
}

// crdFileResult is a crds/ file parsed, or why it cannot be.
type crdFileResult struct {
	objs []*unstructured.Unstructured
	err  error
}

// crdFile parses the crds/ file p, once.
func (b *Bundle) crdFile(p string) ([]*unstructured.Unstructured, error) {
	if r, ok := b.crdFiles.Load(p); ok {
		res := r.(crdFileResult)
		return res.objs, res.err
	}
	objs, lines, err := manifest.Parse(p, b.sources[p])
	for i, o := range objs {
		if err != nil {
			break
		}
		gvk := o.GroupVersionKind()
		switch {
		case gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition":
			err = &RenderError{File: p, Line: lines[i], Msg: fmt.Sprintf("a crds/ file holds only CustomResourceDefinitions, not %s %s", o.GetAPIVersion(), o.GetKind())}
		case gvk.Version != "v1":
			err = &RenderError{File: p, Line: lines[i], Msg: fmt.Sprintf("CustomResourceDefinition %s is %s: the API server serves apiextensions.k8s.io/v1 only", o.GetName(), o.GetAPIVersion())}
		case o.GetName() == "":
			err = &RenderError{File: p, Line: lines[i], Msg: "a CustomResourceDefinition without a name"}
		}
	}
	if err != nil {
		objs = nil
	}
	b.crdFiles.Store(p, crdFileResult{objs: objs, err: err})
	return objs, err
}
