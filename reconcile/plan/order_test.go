package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}

func TestSortForApply(t *testing.T) {
	objs := []*unstructured.Unstructured{
		obj("ValidatingWebhookConfiguration", "hook"),
		obj("Deployment", "b"),
		obj("Widget", "w"), // a custom resource: after workloads
		obj("Service", "svc"),
		obj("Deployment", "a"),
		obj("ConfigMap", "cfg"),
		obj("RoleBinding", "rb"),
		obj("ServiceAccount", "sa"),
		obj("Namespace", "ns"),
		obj("CustomResourceDefinition", "widgets.example.com"),
	}
	SortForApply(objs)
	want := []string{
		"CustomResourceDefinition/widgets.example.com", "Namespace/ns", "ServiceAccount/sa", "RoleBinding/rb",
		"ConfigMap/cfg", "Service/svc", "Deployment/b", "Deployment/a", "Widget/w", "ValidatingWebhookConfiguration/hook",
	}
	if diff := cmp.Diff(want, names(objs)); diff != "" {
		t.Errorf("apply order (-want +got):\n%s", diff)
	}
	var got [][]string
	for _, s := range Stages(objs) {
		got = append(got, names(s))
	}
	if len(got) != 9 || len(got[6]) != 2 {
		t.Errorf("Stages = %v, want 9 with both Deployments together", got)
	}
}
