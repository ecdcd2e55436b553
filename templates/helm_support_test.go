package templates_test

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// The tests of this file pin the rows of docs/helm.md's support table
// that no other test covers: what stencil does with parts of a chart it
// does not support as Helm does.

// renderFiles loads files as Bundle demo and renders them for web.
func renderSupport(t *testing.T, files map[string]string) ([]string, error) {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		return nil, err
	}
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	return names, nil
}

const supportCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"

// crdYAML is a CustomResourceDefinition of kind Kind in group g.
func crdYAML(plural, g, kind string) string {
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + plural + "." + g +
		"\nspec:\n  group: " + g + "\n  names: {kind: " + kind + ", plural: " + plural + "}\n  scope: Namespaced\n" +
		"  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]\n"
}

// TestHelmCRDsFolder: Bundle.CRDs reads the crds/ folders as Helm
// installs them: never templated, the root chart's first, then each
// enabled subchart's (a disabled one's never), several documents to a
// file; a document that is no CustomResourceDefinition is refused at its
// file and line; spec.crds Skip leaves them out. The render itself never
// prints them (`stencil render --include-crds` does).
func TestHelmCRDsFolder(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                    "apiVersion: v2\nname: demo\nversion: 0.1.0\ndependencies:\n- {name: alpha, version: 0.1.0}\n- {name: beta, version: 0.1.0, condition: beta.enabled}\n",
		"values.yaml":                   "beta:\n  enabled: false\n",
		"crds/b.yaml":                   crdYAML("bees", "example.com", "Bee") + "---\n" + crdYAML("ants", "example.com", "Ant"),
		"crds/a.json":                   `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "apes.example.com"}, "spec": {"group": "example.com", "names": {"kind": "Ape", "plural": "apes"}, "scope": "Cluster", "versions": []}}`,
		"crds/README.md":                "not a manifest: {{ never read }}",
		"templates/c.yaml":              supportCM,
		"charts/alpha/Chart.yaml":       "apiVersion: v2\nname: alpha\nversion: 0.1.0\n",
		"charts/alpha/crds/on.yaml":     crdYAML("ons", "on.example.com", "On"),
		"charts/beta/Chart.yaml":        "apiVersion: v2\nname: beta\nversion: 0.1.0\n",
		"charts/beta/crds/off.yaml":     crdYAML("offs", "off.example.com", "Off"),
		"charts/alpha/templates/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpha\n",
		"charts/beta/templates/x.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: beta\n",
	}
	load := func(files map[string]string, mutate ...func(*v1alpha1.BundleSpec)) *templates.Bundle {
		t.Helper()
		spec := v1alpha1.BundleSpec{Files: files}
		for _, m := range mutate {
			m(&spec)
		}
		b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	names := func(b *templates.Bundle, values string) []string {
		t.Helper()
		var in templates.Input
		if values != "" {
			in.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
		}
		crds, err := b.CRDs(in.Values)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range crds {
			out = append(out, c.GetName())
		}
		return out
	}
	b := load(files)
	if got := strings.Join(names(b, ""), ","); got != "apes.example.com,bees.example.com,ants.example.com,ons.on.example.com" {
		t.Errorf("crds %s, want the root's (sorted by file) then the enabled subchart's", got)
	}
	if got := strings.Join(names(b, `{"beta":{"enabled":true}}`), ","); !strings.HasSuffix(got, "ons.on.example.com,offs.off.example.com") {
		t.Errorf("crds %s with the subchart enabled, want its CRD last", got)
	}
	if got, err := renderSupport(t, files); err != nil || strings.Join(got, ",") != "ConfigMap/c,ConfigMap/alpha" {
		t.Errorf("rendered %v, %v: want the templates alone", got, err)
	}
	if got := names(load(files, func(s *v1alpha1.BundleSpec) { s.CRDs = v1alpha1.CRDsSkip }), ""); len(got) != 0 {
		t.Errorf("spec.crds Skip gave %v", got)
	}
	bad := map[string]string{"templates/c.yaml": supportCM, "crds/x.yaml": crdYAML("xs", "example.com", "X") + "---\n" + supportCM}
	if _, err := load(bad).CRDs(nil); err == nil || !strings.Contains(err.Error(), "crds/x.yaml:11: a crds/ file holds only CustomResourceDefinitions, not v1 ConfigMap") {
		t.Errorf("a ConfigMap in crds/: %v", err)
	}
}

// TestHelmKubeVersionChecked: Chart.yaml's kubeVersion is checked as
// Helm checks it, against .Capabilities.KubeVersion without its suffix:
// a cluster outside the constraint fails the render with Helm's message
// naming it; a prerelease constraint ("-0") admits a cluster's build
// suffix; a constraint that does not parse fails the load.
func TestHelmKubeVersionChecked(t *testing.T) {
	chartWith := func(c string) map[string]string {
		return map[string]string{"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\nkubeVersion: " + c + "\n", "templates/c.yaml": supportCM}
	}
	if _, err := renderSupport(t, chartWith(`">=99.0.0"`)); err == nil ||
		err.Error() != "Chart.yaml: chart requires kubeVersion: >=99.0.0 which is incompatible with Kubernetes v1.36.3" {
		t.Errorf("render: %v, want Helm's message", err)
	}
	if got, err := renderSupport(t, chartWith(`">=1.25.0-0 <2.0.0"`)); err != nil || strings.Join(got, ",") != "ConfigMap/c" {
		t.Errorf("rendered %v, %v; want ConfigMap/c", got, err)
	}
	if _, err := renderSupport(t, chartWith(`"not a range"`)); err == nil || !strings.Contains(err.Error(), `Chart.yaml: kubeVersion "not a range" is not a version constraint`) {
		t.Errorf("load: %v, want the constraint refused", err)
	}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: chartWith(`">=1.33.0-0 <1.34.0"`)}})
	if err != nil {
		t.Fatal(err)
	}
	gke := &templates.Capabilities{KubeVersion: templates.KubeVersion{Version: "v1.33.4-gke.1245000", Major: "1", Minor: "33"}}
	if _, err := templates.Render(b, templates.Input{Composition: web, Capabilities: gke}); err != nil {
		t.Errorf("a GKE cluster of v1.33.4: %v", err)
	}
}

// TestHelmVersion: .Capabilities.HelmVersion is Helm v4.3.1's, as charts
// read it (semverCompare on .Version), and .Capabilities.KubeVersion
// prints without a build suffix, as Helm's.
func TestHelmVersion(t *testing.T) {
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: map[string]string{
		"templates/c.yaml": supportCM + `data:
  helm: {{ .Capabilities.HelmVersion.Version | quote }}
  v4: {{ semverCompare ">=3.8.0" .Capabilities.HelmVersion.Version | quote }}
  client: {{ .Capabilities.HelmVersion.KubeClientVersion | quote }}
  kube: {{ .Capabilities.KubeVersion | quote }}
  full: {{ .Capabilities.KubeVersion.Version | quote }}
`}}})
	if err != nil {
		t.Fatal(err)
	}
	caps := &templates.Capabilities{KubeVersion: templates.KubeVersion{Version: "v1.33.4-gke.1245000", Major: "1", Minor: "33"}}
	objs, err := templates.Render(b, templates.Input{Composition: web, Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"helm": "v4.3.1", "v4": "true", "client": "v1.37", "kube": "v1.33.4", "full": "v1.33.4-gke.1245000"}
	if got := objs[0].Object["data"]; !reflect.DeepEqual(got, want) {
		t.Errorf("data %v, want %v", got, want)
	}
}
