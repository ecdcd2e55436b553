package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestChangedFields: the fields the blast radius lists for a changed
// child, one line each, in path order.
func TestChangedFields(t *testing.T) {
	long := strings.Repeat("x", maxShownLength+1)
	tests := []struct {
		name, live, applied string
		want                []string
	}{
		{"nothing but what the server keeps",
			"kind: ConfigMap\nmetadata: {name: a, resourceVersion: '1', generation: 1, uid: u1, managedFields: [{manager: a}]}\ndata: {a: b}\nstatus: {x: 1}",
			"kind: ConfigMap\nmetadata: {name: a, resourceVersion: '2', generation: 2, uid: u1, managedFields: [{manager: b}]}\ndata: {a: b}\nstatus: {x: 2}",
			nil},
		{"scalars changed, added and removed",
			"kind: Deployment\nspec: {replicas: 2, paused: true}",
			"kind: Deployment\nspec: {replicas: 3, minReadySeconds: 5}",
			[]string{"spec.minReadySeconds: (none) → 5", "spec.paused: true → (none)", "spec.replicas: 2 → 3"}},
		{"list items matched by name",
			"kind: Deployment\nspec: {containers: [{name: a, image: x:1}, {name: b, image: y:1}]}",
			"kind: Deployment\nspec: {containers: [{name: b, image: y:2}, {name: a, image: x:1}]}",
			[]string{`spec.containers[name=b].image: "y:1" → "y:2"`}},
		{"list items matched by index",
			"kind: Service\nspec: {ports: [{port: 80}]}",
			"kind: Service\nspec: {ports: [{port: 81}, {port: 82}]}",
			[]string{"spec.ports[0].port: 80 → 81", "spec.ports[1]: added"}},
		{"keys with dots and slashes",
			"kind: ConfigMap\nmetadata: {labels: {app.kubernetes.io/name: a}}",
			"kind: ConfigMap\nmetadata: {labels: {app.kubernetes.io/name: b}}",
			[]string{`metadata.labels["app.kubernetes.io/name"]: "a" → "b"`}},
		{"objects, long and multi-line strings are not shown",
			"kind: ConfigMap\ndata: {conf: \"a\\nb\", long: x}\nspec: {}",
			"kind: ConfigMap\ndata: {conf: \"a\\nc\", long: " + long + "}\nspec: {template: {a: 1}}",
			[]string{"data.conf: changed", "data.long: changed", "spec.template: added"}},
		{"a Secret's values never",
			"apiVersion: v1\nkind: Secret\ndata: {password: YQ==, old: YQ==}\nstringData: {token: a}\ntype: Opaque",
			"apiVersion: v1\nkind: Secret\ndata: {password: Yg==}\nstringData: {token: b}\ntype: kubernetes.io/basic-auth",
			[]string{"data.old: removed", "data.password: changed", "stringData.token: changed", `type: "Opaque" → "kubernetes.io/basic-auth"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range changedFields(object(t, tt.live), object(t, tt.applied)) {
				got = append(got, c.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("changed fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
