package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

func move(from, to string) v1alpha1.ConversionRule {
	return v1alpha1.ConversionRule{Move: &v1alpha1.FieldMove{From: from, To: to}}
}

func setRule(path, expr string) v1alpha1.ConversionRule {
	return v1alpha1.ConversionRule{Set: &v1alpha1.FieldSet{Path: path, Expression: expr}}
}

func defaultRule(path string, v any) v1alpha1.ConversionRule {
	raw, _ := json.Marshal(v)
	return v1alpha1.ConversionRule{Default: &v1alpha1.FieldDefault{Path: path, Value: apiextensionsv1.JSON{Raw: raw}}}
}

func deleteRule(path string) v1alpha1.ConversionRule {
	return v1alpha1.ConversionRule{Delete: &v1alpha1.FieldDelete{Path: path}}
}

// doc decodes JSON as the API server's objects are: integers int64.
func doc(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := decodeJSON([]byte(s), &m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return normalize(m).(map[string]any)
}

var rulesPath = field.NewPath("spec", "api", "versions").Index(1).Child("conversion", "toStorage")

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		rules []v1alpha1.ConversionRule
		in    string
		want  string
	}{
		// move
		{"move renames", rules(move("size", "replicas")), `{"size":3,"a":1}`, `{"replicas":3,"a":1}`},
		{"move of an absent field is a no-op", rules(move("size", "replicas")), `{"replicas":2}`, `{"replicas":2}`},
		{"move replaces the target", rules(move("size", "replicas")), `{"size":3,"replicas":{"x":1}}`, `{"replicas":3}`},
		{"move makes the maps on the way", rules(move("port", "service.http.port")), `{"port":80}`, `{"service":{"http":{"port":80}}}`},
		{"move drops the maps it empties", rules(move("service.port", "port")), `{"service":{"port":80}}`, `{"port":80}`},
		{"move into its own field", rules(move("a", "a.b")), `{"a":1}`, `{"a":{"b":1}}`},
		{"move out of its parent", rules(move("a.b", "a")), `{"a":{"b":1}}`, `{"a":1}`},
		{"move keeps maps that were empty", rules(move("service.port", "port")), `{"service":{}}`, `{"service":{}}`},
		// default
		{"default sets an absent field", rules(defaultRule("replicas", 1)), `{}`, `{"replicas":1}`},
		{"default keeps a present field", rules(defaultRule("replicas", 1)), `{"replicas":5}`, `{"replicas":5}`},
		{"default keeps a present null", rules(defaultRule("replicas", 1)), `{"replicas":null}`, `{"replicas":null}`},
		{"default sets a deep field", rules(defaultRule("a.b", map[string]any{"c": "d"})), `{"a":{"x":1}}`, `{"a":{"x":1,"b":{"c":"d"}}}`},
		// set
		{"set from self", rules(setRule("replicas", "self.size * 2")), `{"size":3}`, `{"size":3,"replicas":6}`},
		{"set null removes", rules(setRule("size", "null")), `{"size":3}`, `{}`},
		{"self is the document before the first rule", rules(move("size", "replicas"), setRule("double", "self.size * 2")), `{"size":3}`, `{"replicas":3,"double":6}`},
		{"a list of ports to a map", rules(setRule("ports", "has(self.ports) ? self.ports.transformMapEntry(i, p, {p.name: p.port}) : null")),
			`{"ports":[{"name":"http","port":80},{"name":"https","port":443}]}`, `{"ports":{"http":80,"https":443}}`},
		{"a map of ports to a list, in key order", rules(setRule("ports", "self.ports.map(k, {'name': k, 'port': self.ports[k]})")),
			`{"ports":{"https":443,"http":80,"admin":9000}}`, `{"ports":[{"name":"admin","port":9000},{"name":"http","port":80},{"name":"https","port":443}]}`},
		{"a string split in two", rules(
			deleteRule("image"),
			setRule("image.repository", "self.image.split(':')[0]"),
			setRule("image.tag", "self.image.split(':').size() > 1 ? self.image.split(':')[1] : null")),
			`{"image":"nginx:1.25"}`, `{"image":{"repository":"nginx","tag":"1.25"}}`},
		// delete
		{"delete removes", rules(deleteRule("a.b")), `{"a":{"b":1,"c":2}}`, `{"a":{"c":2}}`},
		{"delete of an absent field is a no-op", rules(deleteRule("a.b")), `{"a":3}`, `{"a":3}`},
		{"no rules copy", nil, `{"a":[1,{"b":2}]}`, `{"a":[1,{"b":2}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := Compile(tt.rules, rulesPath)
			if len(errs) > 0 {
				t.Fatalf("Compile: %v", errs)
			}
			in := doc(t, tt.in)
			before := doc(t, tt.in)
			got, err := p.Apply(in)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if d := cmp.Diff(doc(t, tt.want), got); d != "" {
				t.Errorf("Apply (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, in); d != "" {
				t.Errorf("Apply changed its input (-before +after):\n%s", d)
			}
		})
	}
}

func rules(r ...v1alpha1.ConversionRule) []v1alpha1.ConversionRule { return r }

func TestApplyCopiesDeeply(t *testing.T) {
	p, _ := Compile(nil, rulesPath)
	in := doc(t, `{"a":{"b":[{"c":1}]}}`)
	out, err := p.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	out["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"] = int64(2)
	if got := in["a"].(map[string]any)["b"].([]any)[0].(map[string]any)["c"]; got != int64(1) {
		t.Errorf("the input shares its values with the output: c is %v", got)
	}
}

func TestApplyNumbers(t *testing.T) {
	p, errs := Compile(rules(setRule("double", "self.size * 2"), setRule("half", "self.ratio / 2.0"), move("n", "m")), rulesPath)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// As a decoder with UseNumber gives them, and as Go code writes them.
	got, err := p.Apply(map[string]any{"size": json.Number("3"), "ratio": json.Number("0.5"), "n": 4})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"size": int64(3), "ratio": 0.5, "double": int64(6), "half": 0.25, "m": int64(4)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules []v1alpha1.ConversionRule
		in    string
		want  []string // substrings of the message
	}{
		{"set into a string", rules(move("a", "b"), setRule("image.tag", "'x'")), `{"image":"nginx:1"}`,
			[]string{"toStorage[1]", "(set image.tag)", `expression "'x'"`, "image is a string, not an object"}},
		{"move into a list", rules(move("port", "ports.http")), `{"port":80,"ports":[1]}`,
			[]string{"toStorage[0]", "(move ports.http)", "ports is an array"}},
		{"an expression that fails", rules(setRule("replicas", "self.size + 1")), `{}`,
			[]string{"toStorage[0]", "(set replicas)", `expression "self.size + 1"`, "no such key"}},
		{"a result that is no JSON value", rules(setRule("d", "duration('1s')")), `{}`,
			[]string{"toStorage[0]", "not a JSON value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := Compile(tt.rules, rulesPath)
			if len(errs) > 0 {
				t.Fatalf("Compile: %v", errs)
			}
			secret := "s3cret-value"
			in := doc(t, tt.in)
			in["password"] = secret
			_, err := p.Apply(in)
			if err == nil {
				t.Fatal("Apply: no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q quotes a value of the document", err)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules []v1alpha1.ConversionRule
		want  []string // fields of the errors, in order
	}{
		{"no op", rules(v1alpha1.ConversionRule{}), []string{"spec.api.versions[1].conversion.toStorage[0]"}},
		{"two ops", rules(v1alpha1.ConversionRule{Move: &v1alpha1.FieldMove{From: "a", To: "b"}, Delete: &v1alpha1.FieldDelete{Path: "c"}}),
			[]string{"spec.api.versions[1].conversion.toStorage[0]"}},
		{"empty paths", rules(move("", "a..b")), []string{"spec.api.versions[1].conversion.toStorage[0].move.from", "spec.api.versions[1].conversion.toStorage[0].move.to"}},
		{"empty default path", rules(move("a", "b"), defaultRule(".a", 1)), []string{"spec.api.versions[1].conversion.toStorage[1].default.path"}},
		{"bad default value", rules(v1alpha1.ConversionRule{Default: &v1alpha1.FieldDefault{Path: "a"}}), []string{"spec.api.versions[1].conversion.toStorage[0].default.value"}},
		{"syntax error", rules(setRule("a", "self.size +")), []string{"spec.api.versions[1].conversion.toStorage[0].set.expression"}},
		{"unknown variable", rules(setRule("a", "other.size")), []string{"spec.api.versions[1].conversion.toStorage[0].set.expression"}},
		{"empty expression", rules(setRule("a", " ")), []string{"spec.api.versions[1].conversion.toStorage[0].set.expression"}},
		{"delete path", rules(deleteRule("a.")), []string{"spec.api.versions[1].conversion.toStorage[0].delete.path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := Compile(tt.rules, rulesPath)
			if p != nil {
				t.Error("Compile returned a program with errors")
			}
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("error fields (-want +got):\n%s\n%v", d, errs)
			}
		})
	}
}

func TestCostLimits(t *testing.T) {
	t.Run("an expression whose estimated cost is too high does not compile", func(t *testing.T) {
		_, errs := Compile(rules(setRule("pairs", "self.ports.map(p, self.ports.map(q, [p, q]))")), rulesPath)
		if len(errs) != 1 || errs[0].Field != "spec.api.versions[1].conversion.toStorage[0].set.expression" || !strings.Contains(errs[0].Detail, "estimated cost") {
			t.Fatalf("Compile: %v, want one error of the expression's estimated cost", errs)
		}
	})
	t.Run("one iteration of a list compiles", func(t *testing.T) {
		if _, errs := Compile(rules(setRule("ports", "self.ports.transformMapEntry(i, p, {p.name: p.port})")), rulesPath); len(errs) > 0 {
			t.Fatalf("Compile: %v", errs)
		}
	})
	t.Run("an evaluation over its cost limit stops", func(t *testing.T) {
		p, errs := Compile(rules(setRule("lower", "self.s.lowerAscii()")), rulesPath)
		if len(errs) > 0 {
			t.Fatalf("Compile: %v", errs)
		}
		_, err := p.Apply(map[string]any{"s": strings.Repeat("AB", 6<<20)})
		if err == nil || !strings.Contains(err.Error(), "toStorage[0] (set lower)") || !strings.Contains(err.Error(), "cost limit") {
			t.Fatalf("Apply: %v, want the rule's cost limit exceeded", err)
		}
	})
	t.Run("the expressions of one conversion together are bounded", func(t *testing.T) {
		var rs []v1alpha1.ConversionRule
		for i := 0; i < 10; i++ {
			rs = append(rs, setRule(fmt.Sprintf("y%d", i), "self.xs.filter(x, x < 0)"))
		}
		p, errs := Compile(rs, rulesPath)
		if len(errs) > 0 {
			t.Fatalf("Compile: %v", errs)
		}
		in := map[string]any{"xs": []any{int64(1), int64(2), int64(3), int64(4)}}
		budget := uint64(1 << 20)
		if _, err := p.apply(context.Background(), in, &budget); err != nil {
			t.Fatalf("apply within the budget: %v", err)
		}
		perRun := (uint64(1<<20) - budget) / 10
		budget = perRun * 5
		_, err := p.apply(context.Background(), in, &budget)
		if !errors.Is(err, ErrCostExceeded) || !strings.Contains(err.Error(), "toStorage[5]") {
			t.Fatalf("apply: %v, want ErrCostExceeded at the sixth rule", err)
		}
	})
}

func errorsAs[T error](err error, target *T) bool { return errors.As(err, target) }
