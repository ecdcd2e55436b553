package suite

import (
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// Gadget is the published kind of the suites' Bundles (spec.api): kind
// Gadget at v1 of a group of the test's own, whose instances render one
// ConfigMap each (GadgetFiles) from a spec GadgetSchema checks.

// GadgetFiles render one ConfigMap per instance from its spec, with the
// lines of extra (YAML, indented as data's entries) appended to its data.
func GadgetFiles(extra string) map[string]string {
	return map[string]string{
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}-conf
data:
  size: {{ .Values.size | quote }}
  kind: {{ .Composition.Kind | quote }}` + extra + "\n",
	}
}

// GadgetSchema is the values schema, and so the spec schema, of Gadget:
// size 1..10 required, color red or blue.
const GadgetSchema = `{"type":"object","required":["size"],"properties":{
  "size":{"type":"integer","minimum":1,"maximum":10,"description":"how many"},
  "color":{"type":"string","enum":["red","blue"]}}}`

// Publishing returns a Bundle spec mutation that publishes kind Gadget in
// group, changed by change.
func Publishing(group string, change ...func(*v1alpha1.BundleAPI)) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) {
		s.Schema = &apiextensionsv1.JSON{Raw: []byte(GadgetSchema)}
		s.API = &v1alpha1.BundleAPI{Group: group, Kind: "Gadget", Version: "v1"}
		for _, c := range change {
			c(s.API)
		}
	}
}

// GadgetGVK is kind Gadget of group.
func GadgetGVK(group string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
}

// Gadget is instance ns/name of Gadget in group, with spec (JSON, "" for
// none).
func Gadget(group, ns, name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GadgetGVK(group))
	u.SetNamespace(ns)
	u.SetName(name)
	if spec != "" {
		u.Object["spec"] = mustJSON(spec)
	}
	return u
}

// mustJSON decodes the JSON object s.
func mustJSON(s string) map[string]any {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"X","spec":` + s + `}`)); err != nil {
		panic(err)
	}
	return u.Object["spec"].(map[string]any)
}

// KindRules are the rules of a published kind's ClusterRole: the
// instances, their status and finalizers, and, withBinding, the kind's
// binding of stencil's admission policy by name (publish.ClusterRoles).
func KindRules(group, plural string, withBinding bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{plural, plural + "/status", plural + "/finalizers"},
		Verbs: []string{"get", "list", "watch", "update", "patch"}}}
	if withBinding {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicybindings"},
			ResourceNames: []string{publish.AccessBindingName(schema.GroupResource{Group: group, Resource: plural})}, Verbs: []string{"update", "patch", "delete"}})
	}
	return rules
}

// GrantKind does what a cluster admin does for a published kind: the
// ClusterRole `stencil bundle rbac` prints (KindRules), aggregated to
// the controller's (GrantController).
func (s *Suite) GrantKind(t testing.TB, group, plural string) {
	t.Helper()
	s.GrantController(t, "stencil-published-"+plural+"."+group, KindRules(group, plural, true)...)
}

// InstanceReady waits until the Gadget's Ready condition is want for its
// generation, with one of reasons when any are given, and returns the
// instance as it then was.
func (s *Suite) InstanceReady(t testing.TB, group, ns, name string, want metav1.ConditionStatus, reasons ...string) *unstructured.Unstructured {
	t.Helper()
	u := Gadget(group, ns, name, "")
	testenv.WaitFor(t, s.Client, u, 0, testenv.Condition{Type: v1alpha1.ConditionReady, Status: want, Reasons: reasons})
	return u
}

// GadgetChecked waits until the API server admits an instance of the
// Gadget kind of group in ns, and stencil's admission policy checks the
// kind (WaitKindChecked): a Bundle's Ready says the kind's CRD is
// Established and served by the controller, not that the API server's
// discovery lists it yet, nor that the kind's binding and parameters of
// the policy, which the Bundle controller wrote, apply in the API server.
func (s *Suite) GadgetChecked(t testing.TB, group, ns string) {
	t.Helper()
	testenv.WaitKindChecked(t, s.Client, Gadget(group, ns, testenv.AdmissionProbe, `{"size":1}`), 0)
}

// ServeGadgets publishes kind Gadget from a Bundle named prefix-<ns> in
// group prefix-<ns>.example.com, granted to the controller, and waits
// until the Bundle says it serves it and the API server admits and
// checks its instances (GadgetChecked). It returns the test's namespace
// (Namespace), the group, the Bundle's name and its Ready condition.
func (s *Suite) ServeGadgets(t testing.TB, prefix string, change ...func(*v1alpha1.BundleAPI)) (ns, group, name string, ready metav1.Condition) {
	t.Helper()
	ns = testenv.Namespace(t, s.Client)
	group = prefix + "-" + ns + ".example.com"
	s.GrantKind(t, group, "gadgets")
	b := s.Bundle(t, prefix+"-"+ns, GadgetFiles(""), Publishing(group, change...))
	ready = s.BundleReady(t, b.Name, metav1.ConditionTrue, v1alpha1.ReasonReady)
	s.GadgetChecked(t, group, ns)
	return ns, group, b.Name, ready
}
