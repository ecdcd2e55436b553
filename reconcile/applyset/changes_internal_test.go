package applyset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestChangedFields(t *testing.T) {
	tests := []struct {
		name          string
		desired, live map[string]any
		want          []string
	}{
		{"same", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "1", "b": "2"}}, nil},
		{"changed value", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "2"}}, []string{"data.a"}},
		{"missing field", map[string]any{"spec": map[string]any{"replicas": int64(2)}}, map[string]any{"spec": map[string]any{}}, []string{"spec.replicas"}},
		{"list element", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}},
			map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(81), "protocol": "TCP"}}}}, []string{"spec.ports[0].port"}},
		{"list length", map[string]any{"args": []any{"a"}}, map[string]any{"args": []any{"a", "b"}}, []string{"args"}},
		{"quantities compare by value", map[string]any{"cpu": "0.5"}, map[string]any{"cpu": "500m"}, nil},
		{"fields only live holds are kept", map[string]any{"metadata": map[string]any{"name": "a"}},
			map[string]any{"metadata": map[string]any{"name": "a", "uid": "u"}, "status": map[string]any{"ready": true}}, nil},
		{"a null removes", map[string]any{"spec": map[string]any{"paused": nil}}, map[string]any{"spec": map[string]any{"paused": true}}, []string{"spec.paused"}},
		{"named items by name", map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:2"}}},
			map[string]any{"containers": []any{map[string]any{"name": "log", "image": "busybox"}, map[string]any{"name": "web", "image": "nginx:1"}}},
			[]string{"containers[name=web].image"}},
		{"keys with dots bracketed", map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "b"}}},
			map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "a"}}}, []string{"metadata.labels[app.kubernetes.io/name]"}},
		{"numbers by value", map[string]any{"replicas": int64(2)}, map[string]any{"replicas": float64(2)}, nil},
		{"bounded", map[string]any{"a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1"}, map[string]any{}, []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, changedFields(tt.desired, tt.live, maxChangedFields)); diff != "" {
				t.Errorf("changedFields (-want +got):\n%s", diff)
			}
		})
	}
}
