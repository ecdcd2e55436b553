package reconcile

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func mustYAML(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const desiredDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: app
        image: nginx
        resources: {requests: {cpu: "0.5"}}
        ports: [{containerPort: 80}]
`

// owned is the managedFields entry stencil's apply of desiredDeployment leaves.
const ownedFields = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{"f:requests":{"f:cpu":{}}},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}`

func liveDeployment(t *testing.T, manager, fields string, mutate ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	live := mustYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, uid: u1, resourceVersion: "7", labels: {app: web, extra: x}}
spec:
  replicas: 2
  progressDeadlineSeconds: 600
  template:
    spec:
      containers:
      - name: app
        image: nginx
        imagePullPolicy: Always
        resources: {requests: {cpu: 500m}}
        ports: [{containerPort: 80, protocol: TCP}]
status: {replicas: 2}
`)
	for _, m := range mutate {
		m(live)
	}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}})
	return live
}

func TestUpToDate(t *testing.T) {
	desired := mustYAML(t, desiredDeployment)
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		// Server defaults, other labels and status do not make a difference;
		// "0.5" and "500m" are the same quantity.
		{"live holds what stencil applied plus defaults", liveDeployment(t, FieldManager, ownedFields), true},
		// A value stencil sets has drifted.
		{"drifted value", liveDeployment(t, FieldManager, ownedFields, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
		}), false},
		// stencil owns a field the template no longer renders: it must be applied away.
		{"owned field no longer desired", liveDeployment(t, FieldManager,
			`{"f:metadata":{"f:labels":{"f:app":{},"f:old":{}}}}`), false},
		// Nothing owned by stencil: the object was written by someone else.
		{"not applied by stencil", liveDeployment(t, "kubectl", ownedFields), false},
		{"unreadable managed fields", liveDeployment(t, FieldManager, `{`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := upToDate(desired, tt.live); got != tt.want {
				t.Errorf("upToDate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScalarEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{int64(1), float64(1), true},
		{"1", int64(1), true}, // a quantity written as a number
		{"0.5", "500m", true},
		{"1Gi", "1024Mi", true},
		{"a", "b", false},
		{true, "true", false},
		{int64(2), int64(3), false},
	}
	for _, tt := range tests {
		if got := scalarEqual(tt.a, tt.b); got != tt.want {
			t.Errorf("scalarEqual(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
