package templates

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates/kustomize"
	"github.com/stencil-dev/stencil/templates/manifest"
)

// kustomize runs kustomize (package kustomize, which says how it is kept
// to the bundle's files) over the rendered templates at their paths and
// the bundle's other files, and checks the objects it builds as a whole
// (manifest.Check).
func (b *Bundle) kustomize(outputs map[string]string) ([]*unstructured.Unstructured, error) {
	files := map[string]string{}
	for p, content := range b.spec.Files {
		if rendered, ok := outputs[p]; ok {
			if err := manifest.CheckUTF8(p, rendered); err != nil {
				return nil, err
			}
			content = rendered
		} else if strings.HasPrefix(p, "templates/") {
			continue // helpers and unrendered files
		}
		files[p] = content
	}
	for p, rendered := range outputs { // subcharts' templates
		if _, ok := files[p]; !ok {
			files[p] = rendered
		}
	}
	objs, err := kustomize.Run(files)
	if err != nil {
		return nil, err
	}
	sources := make([]manifest.Source, len(objs))
	for i := range sources {
		sources[i] = manifest.Source{File: KustomizationFile}
	}
	return objs, manifest.Check(objs, sources, "", nil)
}
