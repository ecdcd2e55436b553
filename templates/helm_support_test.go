package templates_test

import (
	"strings"
	"testing"

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

// TestHelmCRDsFolderNotApplied: Helm installs a chart's crds/ files before
// its templates (and `helm template --include-crds` prints them); stencil
// does not: they are plain files, never rendered nor applied. A CRD a
// bundle needs goes under templates/.
func TestHelmCRDsFolderNotApplied(t *testing.T) {
	crd := "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"
	got, err := renderSupport(t, map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"crds/widget.yaml": crd,
		"templates/c.yaml": supportCM,
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "ConfigMap/c" {
		t.Errorf("rendered %v, want only ConfigMap/c (crds/ is not applied)", got)
	}
}

// TestHelmKubeVersionNotChecked: Helm refuses a chart whose Chart.yaml
// kubeVersion the cluster does not satisfy ("chart requires kubeVersion:
// ... which is incompatible with Kubernetes ..."); stencil does not read
// kubeVersion: a template that needs a version checks
// .Capabilities.KubeVersion itself.
func TestHelmKubeVersionNotChecked(t *testing.T) {
	got, err := renderSupport(t, map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: demo\nversion: 0.1.0\nkubeVersion: \">=99.0.0\"\n",
		"templates/c.yaml": supportCM,
	})
	if err != nil || strings.Join(got, ",") != "ConfigMap/c" {
		t.Errorf("rendered %v, %v; want ConfigMap/c and no error", got, err)
	}
}

// TestHelmNotesNotRendered: templates/NOTES.txt, which Helm renders and
// prints after an install, is never parsed nor executed (stencil prints
// no release notes), so even a NOTES.txt that would fail to render does
// not fail the chart.
func TestHelmNotesNotRendered(t *testing.T) {
	got, err := renderSupport(t, map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"templates/NOTES.txt": "Visit {{ .Values.url | required \"url is required\" }}\n{{ fail \"notes\" }}\n",
		"templates/c.yaml":    supportCM,
	})
	if err != nil || strings.Join(got, ",") != "ConfigMap/c" {
		t.Errorf("rendered %v, %v; want ConfigMap/c and no error", got, err)
	}
}
