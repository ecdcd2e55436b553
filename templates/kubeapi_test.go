package templates_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/templates"
)

// TestDefaultCapabilities: without a cluster, .Capabilities is the
// generated list of the Kubernetes release stencil builds: group/versions
// and group/version/kinds of every built-in API, APIService included.
func TestDefaultCapabilities(t *testing.T) {
	caps := templates.DefaultCapabilities()
	if caps.KubeVersion.Version != templates.BuiltinKubeVersion || caps.KubeVersion.Major != "1" || caps.KubeVersion.Minor == "" {
		t.Errorf("KubeVersion = %+v, want %s with its major and minor", caps.KubeVersion, templates.BuiltinKubeVersion)
	}
	for _, v := range []string{
		"v1", "v1/ConfigMap", "v1/Namespace", "apps/v1", "apps/v1/Deployment", "batch/v1/CronJob",
		"apiregistration.k8s.io/v1/APIService", "apiextensions.k8s.io/v1/CustomResourceDefinition",
		"policy/v1/PodDisruptionBudget", "autoscaling/v2/HorizontalPodAutoscaler",
		"admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
	} {
		if !caps.APIVersions.Has(v) {
			t.Errorf("APIVersions.Has(%q) = false", v)
		}
	}
	for _, v := range []string{"apps/v1beta1", "extensions/v1beta1/Ingress", "apps/v1/Scale", "apps/v1/deployments", "policy/v1beta1/PodSecurityPolicy"} {
		if caps.APIVersions.Has(v) {
			t.Errorf("APIVersions.Has(%q) = true: Kubernetes %s does not serve it", v, templates.BuiltinKubeVersion)
		}
	}
	caps.APIVersions[0] = "changed"
	if templates.DefaultCapabilities().APIVersions[0] == "changed" {
		t.Error("DefaultCapabilities returned a list shared with its caller")
	}
	got, err := render(t, cm(`"{{ .Capabilities.APIVersions.Has "apps/v1/Deployment" }} {{ .Capabilities.KubeVersion }}"`), "")
	if err != nil || !strings.Contains(got, "v: true "+templates.BuiltinKubeVersion) {
		t.Errorf("template printed %q (err %v)", got, err)
	}
}

// TestBuiltinResources: the generated list places every built-in kind:
// its plural and whether it is namespaced.
func TestBuiltinResources(t *testing.T) {
	want := map[string]bool{ // group/version/kind → namespaced
		"v1/ConfigMap": true, "v1/Namespace": false, "v1/PersistentVolume": false, "apps/v1/Deployment": true,
		"apiregistration.k8s.io/v1/APIService":                           false,
		"rbac.authorization.k8s.io/v1/ClusterRole":                       false,
		"scheduling.k8s.io/v1/PriorityClass":                             false,
		"storage.k8s.io/v1/StorageClass":                                 false,
		"admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": false,
		"networking.k8s.io/v1/Ingress":                                   true,
	}
	for _, r := range templates.BuiltinResources() {
		gvk := r.GroupVersion() + "/" + r.Kind
		if r.Resource == "" || r.Version == "" {
			t.Errorf("%s has no resource or version: %+v", gvk, r)
		}
		if namespaced, ok := want[gvk]; ok {
			if r.Namespaced != namespaced {
				t.Errorf("%s: namespaced = %t, want %t", gvk, r.Namespaced, namespaced)
			}
			delete(want, gvk)
		}
	}
	for gvk := range want {
		t.Errorf("%s is not in the built-in list", gvk)
	}
}
