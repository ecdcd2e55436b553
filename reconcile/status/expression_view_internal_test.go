package status

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/outputs"
)

// TestExpressionViewHidesSecrets: an output over a Secret member sees its
// keys, never its values, so a Bundle cannot copy a Secret into a
// parent's status; other kinds are seen whole, and the member is left as
// it was.
func TestExpressionViewHidesSecrets(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "annotations": map[string]any{
			"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"aHVudGVyMg=="}}`, "team": "a"}},
		"data":       map[string]any{"password": "aHVudGVyMg=="},
		"stringData": map[string]any{"user": "root"},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}}
	set, err := outputs.Compile(outputs.New, []outputs.Output{
		{Name: "password", Type: "string", Value: "members.db.data.password", Path: "outputs[0]"},
		{Name: "hasPassword", Type: "boolean", Value: "has(members.db.data.password) && has(members.db.stringData.user)", Path: "outputs[1]"},
		{Name: "annotations", Type: "object", Value: "members.db.metadata.annotations", Path: "outputs[2]"},
		{Name: "k", Type: "string", Value: "members.cm.data.k", Path: "outputs[3]"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	values, problems := set.Evaluate(context.Background(), nil, map[string]map[string]any{"db": ExpressionView(secret), "cm": ExpressionView(cm)})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if values["password"] != "" || values["hasPassword"] != true || values["k"] != "v" {
		t.Errorf("values = %v, want the Secret's keys without values and the ConfigMap whole", values)
	}
	if ann := values["annotations"].(map[string]any); len(ann) != 1 || ann["team"] != "a" {
		t.Errorf("annotations = %v, want the last-applied configuration gone", ann)
	}
	if secret.Object["data"].(map[string]any)["password"] != "aHVudGVyMg==" || len(secret.GetAnnotations()) != 2 {
		t.Error("ExpressionView changed the member")
	}
}
