package outputs_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/outputs"
)

var (
	deployment = map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"},
		"spec":     map[string]any{"replicas": int64(3)},
		"status":   map[string]any{"availableReplicas": int64(2), "readyReplicas": int64(2)},
	}
	database = map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]any{"name": "db"},
		"spec":     map[string]any{"replicas": int64(3)},
		"status":   map[string]any{"readyReplicas": int64(2)},
	}
	parent = map[string]any{"metadata": map[string]any{"name": "example"}, "spec": map[string]any{"size": int64(3)}}
)

func compile(t *testing.T, outs []outputs.Output, rules []outputs.Rule) *outputs.Set {
	t.Helper()
	s, err := outputs.Compile(outputs.New, outs, rules)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestArticlesStatus: the fields the articles' controllers wrote, as
// outputs over the members.
func TestArticlesStatus(t *testing.T) {
	s := compile(t, []outputs.Output{
		{Name: "availableReplicas", Type: "integer", Value: "members.web.status.availableReplicas", Path: "outputs[0]"},
		{Name: "phase", Type: "string", Path: "outputs[1]",
			Value: `members.database.status.readyReplicas >= members.database.spec.replicas / 2 + 1 ? "ready" : "creating"`},
		{Name: "replicas", Type: "number", Value: "parent.spec.size", Path: "outputs[2]"},
		{Name: "images", Type: "array", Value: "[members.web.metadata.name, parent.metadata.name]", Path: "outputs[3]"},
		{Name: "summary", Type: "object", Value: `{"web": members.web.status.readyReplicas}`, Path: "outputs[4]"},
	}, nil)
	values, problems := s.Evaluate(context.Background(), parent, map[string]map[string]any{"web": deployment, "database": database})
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := map[string]any{
		"availableReplicas": int64(2), "phase": "ready", "replicas": float64(3),
		"images": []any{"web", "example"}, "summary": map[string]any{"web": int64(2)},
	}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestReadiness: a rule replaces kstatus for the members it selects, by
// id, Kind or group/Kind; the CloudManager database is ready with a
// quorum.
func TestReadiness(t *testing.T) {
	quorum := "self.status.readyReplicas >= self.spec.replicas / 2 + 1"
	gk := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	for _, sel := range []string{"database", "StatefulSet", "apps/StatefulSet"} {
		t.Run(sel, func(t *testing.T) {
			s := compile(t, nil, []outputs.Rule{{Member: sel, ReadyWhen: quorum, Path: "readiness[0]"}})
			ready, matched, err := s.Ready(context.Background(), parent, "database", gk, database)
			if err != nil || !matched || !ready {
				t.Errorf("Ready = %v, %v, %v; want ready by the rule", ready, matched, err)
			}
			one := map[string]any{"spec": map[string]any{"replicas": int64(3)}, "status": map[string]any{"readyReplicas": int64(1)}}
			if ready, _, _ := s.Ready(context.Background(), parent, "database", gk, one); ready {
				t.Error("1 of 3 replicas ready is a quorum")
			}
		})
	}
	s := compile(t, nil, []outputs.Rule{{Member: "apps/StatefulSet", ReadyWhen: quorum, Path: "readiness[0]"}})
	if _, matched, _ := s.Ready(context.Background(), parent, "web", schema.GroupKind{Group: "apps", Kind: "Deployment"}, deployment); matched {
		t.Error("a rule for StatefulSets selected a Deployment")
	}
	// A rule that cannot decide says why, and the member is not ready.
	ready, matched, err := s.Ready(context.Background(), parent, "database", gk, map[string]any{"spec": map[string]any{}})
	if ready || !matched || err == nil || !strings.Contains(err.Error(), "readiness[0].readyWhen") {
		t.Errorf("Ready of an object without status = %v, %v, %v; want not ready, with an error naming the rule", ready, matched, err)
	}
}

// TestRunTimeProblems: an output that fails is left out and named; the
// others are computed.
func TestRunTimeProblems(t *testing.T) {
	s := compile(t, []outputs.Output{
		{Name: "ok", Type: "integer", Value: "members.web.status.readyReplicas", Path: "outputs[0]"},
		{Name: "missing", Type: "integer", Value: "members.database.status.readyReplicas", Path: "outputs[1]"},
		{Name: "wrongType", Type: "integer", Value: "members.web.metadata.name", Path: "outputs[2]"},
		{Name: "tooLarge", Type: "string", Value: "members.web.metadata.name + members.web.metadata.name", Path: "outputs[4]"},
		{Name: "tooCostly", Type: "integer", Path: "outputs[3]",
			Value: "size(members.web.metadata.name.split('').map(a, members.web.metadata.name.split('').map(b, members.web.metadata.name.split('').map(c, [a, b, c]))))"},
	}, nil)
	long := map[string]any{}
	for k, v := range deployment {
		long[k] = v
	}
	long["metadata"] = map[string]any{"name": strings.Repeat("x", outputs.MaxValueBytes/2+1)}
	values, problems := s.Evaluate(context.Background(), parent, map[string]map[string]any{"web": long})
	if diff := cmp.Diff(map[string]any{"ok": int64(2)}, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	got := map[string]string{}
	for _, p := range problems {
		got[p.Name] = p.Error()
	}
	for name, want := range map[string]string{
		"missing":   "no such key: database",
		"wrongType": "the value is a string, want integer",
		"tooCostly": "cost limit exceeded",
		"tooLarge":  "more than 16384",
	} {
		if !strings.Contains(got[name], want) {
			t.Errorf("problem of %s = %q, want it to say %q", name, got[name], want)
		}
	}
}

// TestCompileErrors: what does not compile is refused with the
// declaration's path, and the line and column.
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		out  outputs.Output
		want string
	}{
		{"syntax", outputs.Output{Name: "a", Type: "integer", Value: "members.web.status.(", Path: "outputs[0]"}, "outputs[0].value:1:20: Syntax error"},
		{"unknown name", outputs.Output{Name: "a", Type: "integer", Value: "member.web", Path: "outputs[0]"}, "outputs[0].value:1:1: undeclared reference to 'member'"},
		{"unknown function", outputs.Output{Name: "a", Type: "string", Value: "now()", Path: "outputs[0]"}, "undeclared reference to 'now'"},
		{"known wrong type", outputs.Output{Name: "a", Type: "integer", Value: `"x" + "y"`, Path: "outputs[0]"}, "outputs[0].value: the expression's type is string, want int"},
		{"undeclared type", outputs.Output{Name: "a", Type: "date", Value: "1", Path: "outputs[0]"}, `outputs[0].type: "date" is not one of`},
		{"empty", outputs.Output{Name: "a", Type: "string", Path: "outputs[0]"}, "outputs[0].value: required"},
		{"no name", outputs.Output{Type: "string", Value: "'x'", Path: "outputs[0]"}, "outputs[0].name: required"},
		{"too long", outputs.Output{Name: "a", Type: "string", Value: "'" + strings.Repeat("x", outputs.MaxExpressionLength) + "'", Path: "outputs[0]"}, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := outputs.Compile(outputs.New, []outputs.Output{tt.out}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
		})
	}
	_, err := outputs.Compile(outputs.New, []outputs.Output{
		{Name: "a", Type: "string", Value: "'x'", Path: "outputs[0]"},
		{Name: "a", Type: "string", Value: "'y'", Path: "outputs[1]"},
	}, []outputs.Rule{{Member: "db", ReadyWhen: "self.status", Path: "readiness[0]"}, {ReadyWhen: "true", Path: "readiness[1]"}})
	var ce *outputs.CompileError
	if !errors.As(err, &ce) || len(ce.Problems) != 2 {
		t.Fatalf("err = %v, want two problems: the output declared twice and the rule without a member", err)
	}
	if !strings.Contains(ce.Problems[0], `outputs[1].name: "a" is declared twice`) || !strings.Contains(ce.Problems[1], "readiness[1].member: required") {
		t.Errorf("problems = %q", ce.Problems)
	}
}

// TestKubernetesLibraries: the API server's CEL libraries are there, as in
// validation rules.
func TestKubernetesLibraries(t *testing.T) {
	s := compile(t, []outputs.Output{
		{Name: "memory", Type: "integer", Value: `quantity("1Gi").asInteger()`, Path: "outputs[0]"},
		{Name: "host", Type: "string", Value: `url("https://example.com:8443/x").getHostname()`, Path: "outputs[1]"},
		{Name: "matches", Type: "boolean", Value: `"web-1".matches("^web-[0-9]+$")`, Path: "outputs[2]"},
	}, nil)
	values, problems := s.Evaluate(context.Background(), parent, nil)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := map[string]any{"memory": int64(1 << 30), "host": "example.com", "matches": true}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestID(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "StatefulSet", "metadata": map[string]any{"name": "db"}}}
	if got := outputs.ID(u); got != "StatefulSet/db" {
		t.Errorf("ID = %q, want StatefulSet/db", got)
	}
	u.SetAnnotations(map[string]string{outputs.AnnotationID: "database"})
	if got := outputs.ID(u); got != "database" {
		t.Errorf("ID = %q, want database", got)
	}
}

// BenchmarkEvaluate measures what outputs cost a pass: the articles'
// three fields over two members, and a readiness rule.
func BenchmarkEvaluate(b *testing.B) {
	s, err := outputs.Compile(outputs.Stored, []outputs.Output{
		{Name: "availableReplicas", Type: "integer", Value: "members.web.status.availableReplicas", Path: "outputs[0]"},
		{Name: "phase", Type: "string", Path: "outputs[1]",
			Value: `members.database.status.readyReplicas >= members.database.spec.replicas / 2 + 1 ? "ready" : "creating"`},
	}, []outputs.Rule{{Member: "apps/StatefulSet", ReadyWhen: "self.status.readyReplicas >= self.spec.replicas / 2 + 1", Path: "readiness[0]"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	members := map[string]map[string]any{"web": deployment, "database": database}
	gk := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	b.ReportAllocs()
	for b.Loop() {
		if _, problems := s.Evaluate(ctx, parent, members); len(problems) > 0 {
			b.Fatal(problems)
		}
		if ready, _, err := s.Ready(ctx, parent, "database", gk, database); err != nil || !ready {
			b.Fatal(ready, err)
		}
	}
}

// BenchmarkCompile measures compiling one output (at lint, admission and
// each time the controller loads a Bundle).
func BenchmarkCompile(b *testing.B) {
	outs := []outputs.Output{{Name: "phase", Type: "string", Path: "outputs[0]",
		Value: `members.database.status.readyReplicas >= members.database.spec.replicas / 2 + 1 ? "ready" : "creating"`}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := outputs.Compile(outputs.New, outs, nil); err != nil {
			b.Fatal(err)
		}
	}
}
