package templates

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates/manifest"
)

// parseOutputs parses the output of each emitted template (in order)
// and checks the objects as a whole (package manifest).
func parseOutputs(units []unit, outputs map[string]string, namespace string, clusterScoped map[string]bool) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	var sources []manifest.Source
	for _, u := range units {
		docs, lines, err := manifest.Parse(u.file, outputs[u.key])
		if err != nil {
			return nil, err
		}
		objs = append(objs, docs...)
		for _, l := range lines {
			sources = append(sources, manifest.Source{File: u.file, Line: l})
		}
	}
	return objs, manifest.Check(objs, sources, namespace, clusterScoped)
}
