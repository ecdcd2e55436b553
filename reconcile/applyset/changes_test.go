package applyset_test

import (
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(t *testing.T, yaml string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(yaml)); err != nil {
		t.Fatal(err)
	}
	return u
}

func changes(fs []applyset.FieldChange) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}

func TestChangedFields(t *testing.T) {
	for _, tc := range []struct {
		name        string
		live, after string
		want        []string
	}{
		{"a scalar", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":3}}`,
			[]string{"spec.replicas 2 → 3"}},
		{"server bookkeeping and status are not changes",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"1","generation":1,"uid":"a","managedFields":[{"manager":"x"}],"creationTimestamp":"2026-01-01T00:00:00Z"},"status":{"x":1}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"2","generation":2,"uid":"b","managedFields":[{"manager":"y"}]},"status":{"x":2}}`,
			nil},
		{"containers by name", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1"},{"name":"log","image":"busybox"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"log","image":"busybox"},{"name":"web","image":"nginx:2"}]}}}}`,
			[]string{`spec.template.spec.containers[name=web].image "nginx:1" → "nginx:2"`}},
		{"added and removed", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"app.kubernetes.io/name":"a"}},"data":{"old":"x"}}`,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"app.kubernetes.io/name":"a","tier":"web"}},"data":{"new":"y"}}`,
			[]string{`data.new (none) → "y"`, `data.old "x" → (none)`, `metadata.labels.tier (none) → "web"`}},
		{"a map added", `{"apiVersion":"v1","kind":"Service","spec":{}}`, `{"apiVersion":"v1","kind":"Service","spec":{"selector":{"app":"a"}}}`,
			[]string{"spec.selector added"}},
		{"a list of another length", `{"apiVersion":"v1","kind":"X","spec":{"args":["a"]}}`, `{"apiVersion":"v1","kind":"X","spec":{"args":["a","b"]}}`,
			[]string{"spec.args changed"}},
		{"a Secret's values never show", `{"apiVersion":"v1","kind":"Secret","data":{"password":"b2xk","gone":"eA=="}}`,
			`{"apiVersion":"v1","kind":"Secret","data":{"password":"bmV3","token":"eQ=="}}`,
			[]string{"data.gone removed", "data.password changed", "data.token added"}},
		{"last-applied never shows", `{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"b2xk\"}}"}}}`,
			`{"apiVersion":"v1","kind":"Secret","metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"p\":\"bmV3\"}}"}}}`,
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(applyset.ChangedFields(object(t, tc.live), object(t, tc.after)))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChangedFieldsCutsLongValues(t *testing.T) {
	long := strings.Repeat("x", 100)
	got := changes(applyset.ChangedFields(object(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}}`),
		object(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"`+long+`"}}`)))
	if len(got) != 1 || strings.Contains(got[0], long) || !strings.HasSuffix(got[0], "…") {
		t.Errorf("got %q; want one change with the long value cut", got)
	}
}
