package main

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"
)

// Objects renders chart name with both engines and returns the objects
// each rendered, as sorted YAML documents normalized for comparison:
// Helm's `managed-by: Helm` (.Release.Service) reads as stencil's
// `managed-by: stencil`, and checksum annotations (of text that holds
// .Release.Service) are blanked. Helm's are what `helm template
// --skip-tests` prints for the chart (its engine in process, values as
// `helm template` prepares them); empty documents are dropped.
func Objects(name string) (stencilObjs, helmObjs []string, err error) {
	dir, err := ChartDir(name)
	if err != nil {
		return nil, nil, err
	}
	b, err := StencilLoad(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("stencil: %w", err)
	}
	objs, err := StencilRender(b, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("stencil: %w", err)
	}
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, nil, err
		}
		stencilObjs = append(stencilObjs, normal(string(y)))
	}
	c, err := HelmLoad(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("helm: %w", err)
	}
	out, err := HelmRender(c)
	if err != nil {
		return nil, nil, fmt.Errorf("helm: %w", err)
	}
	// What `helm template --skip-tests` prints: the manifests and hooks
	// releaseutil.SortManifests finds in the engine's output (partials and
	// NOTES.txt left out, documents split as Helm splits them), each
	// followed by a newline, test hooks left out (stencil never applies
	// them). None of the charts has a crds/ folder.
	for name := range out {
		if strings.HasSuffix(name, "NOTES.txt") { // as Helm's action package drops them, subcharts' too
			delete(out, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(out, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, nil, fmt.Errorf("helm: %w", err)
	}
	docs := make([]string, 0, len(manifests)+len(hooks))
	for _, m := range manifests {
		docs = append(docs, m.Content)
	}
	for _, h := range hooks {
		if !slices.Contains(h.Events, releasev1.HookTest) {
			docs = append(docs, h.Manifest)
		}
	}
	for _, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc+"\n"), &m); err != nil {
			return nil, nil, fmt.Errorf("helm's output: %w\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		y, _ := yaml.Marshal(m)
		helmObjs = append(helmObjs, normal(strings.ReplaceAll(string(y), "managed-by: Helm", "managed-by: stencil")))
	}
	sort.Strings(stencilObjs)
	sort.Strings(helmObjs)
	return stencilObjs, helmObjs, nil
}

// checksumRE matches a checksum annotation: of text that holds
// .Release.Service, so it differs between the two.
var checksumRE = regexp.MustCompile(`(checksum/[a-z-]+): [0-9a-f]{64}`)

func normal(y string) string { return checksumRE.ReplaceAllString(y, "$1: …") }
