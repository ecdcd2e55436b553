package templates_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// replicasFiles is a bundle whose values.schema.json takes replicas only
// (size, what an earlier revision took, is refused) and whose ConfigMap
// shows the replicas the templates see.
var replicasFiles = map[string]string{
	"values.yaml":        "image: nginx\n",
	"values.schema.json": `{"type": "object", "additionalProperties": false, "required": ["replicas"], "properties": {"replicas": {"type": "integer", "minimum": 1}, "image": {"type": "string"}}}`,
	"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n  image: \"{{ .Values.image }}\"\n",
}

// move is a rule moving from to to.
func move(from, to string) v1alpha1.ConversionRule {
	return v1alpha1.ConversionRule{Move: &v1alpha1.FieldMove{From: from, To: to}}
}

// set is a rule setting path to the CEL expression expr.
func set(path, expr string) v1alpha1.ConversionRule {
	return v1alpha1.ConversionRule{Set: &v1alpha1.FieldSet{Path: path, Expression: expr}}
}

// migrations is a mutation giving a bundle the values migrations ms.
func migrations(ms ...v1alpha1.ValuesMigration) func(*v1alpha1.BundleSpec) {
	return func(s *v1alpha1.BundleSpec) { s.ValuesMigrations = ms }
}

var sizeToReplicas = v1alpha1.ValuesMigration{Name: "size-to-replicas", Rules: []v1alpha1.ConversionRule{move("size", "replicas")}}

// renderedData renders b for vals and returns the ConfigMap's data.
func renderedData(t *testing.T, b *templates.Bundle, vals *apiextensionsv1.JSON) map[string]any {
	t.Helper()
	objs, err := templates.Render(b, templates.Input{Values: vals, Composition: web})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	data, _ := objs[0].Object["data"].(map[string]any)
	return data
}

func TestValuesMigrations(t *testing.T) {
	countToReplicas := v1alpha1.ValuesMigration{Name: "count-to-replicas", Rules: []v1alpha1.ConversionRule{move("count", "replicas")}}
	sizeToCount := v1alpha1.ValuesMigration{Name: "size-to-count", Rules: []v1alpha1.ConversionRule{move("size", "count")}}
	tests := []struct {
		name       string
		migrations []v1alpha1.ValuesMigration
		values     string
		want       []string // the migrations applied
		replicas   string
	}{
		// Values the schema takes are rendered as they are, whatever
		// migrations the bundle has.
		{name: "accepted as they are", migrations: []v1alpha1.ValuesMigration{sizeToReplicas}, values: `{"replicas": 2}`, replicas: "2"},
		// Refused values are migrated; the first accepted result renders.
		{name: "one migration", migrations: []v1alpha1.ValuesMigration{sizeToReplicas}, values: `{"size": 3}`, want: []string{"size-to-replicas"}, replicas: "3"},
		{name: "the first that suffices", migrations: []v1alpha1.ValuesMigration{sizeToReplicas, countToReplicas}, values: `{"size": 3}`, want: []string{"size-to-replicas"}, replicas: "3"},
		// Each migration runs over the result of the one before, from
		// the first: the values of a revision two schemas back.
		{name: "chained", migrations: []v1alpha1.ValuesMigration{sizeToCount, countToReplicas}, values: `{"size": 4}`, want: []string{"size-to-count", "count-to-replicas"}, replicas: "4"},
		{name: "chained from the middle", migrations: []v1alpha1.ValuesMigration{sizeToCount, countToReplicas}, values: `{"count": 5}`, want: []string{"size-to-count", "count-to-replicas"}, replicas: "5"},
		// CEL reaches what a move cannot say.
		{name: "expression", migrations: []v1alpha1.ValuesMigration{{Name: "double", Rules: []v1alpha1.ConversionRule{set("replicas", "self.size * 2"), {Delete: &v1alpha1.FieldDelete{Path: "size"}}}}}, values: `{"size": 3}`, want: []string{"double"}, replicas: "6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bundle(t, replicasFiles, migrations(tt.migrations...))
			vals := values(tt.values)
			got, err := templates.ValuesMigrations(b, vals)
			if err != nil {
				t.Fatalf("ValuesMigrations: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("migrations applied (-want +got):\n%s", diff)
			}
			data := renderedData(t, b, vals)
			if data["replicas"] != tt.replicas || data["image"] != "nginx" {
				t.Errorf("rendered data = %v, want replicas %s and values.yaml's image", data, tt.replicas)
			}
			if string(vals.Raw) != tt.values {
				t.Errorf("the parent's values changed: %s", vals.Raw)
			}
			// Asked again (the remembered merge), the same answer.
			if again, _ := templates.ValuesMigrations(b, vals); !slices.Equal(again, tt.want) {
				t.Errorf("asked again: %v, want %v", again, tt.want)
			}
		})
	}
}

func TestValuesMigrationsRefused(t *testing.T) {
	failing := v1alpha1.ValuesMigration{Name: "from-nothing", Rules: []v1alpha1.ConversionRule{set("replicas", "self.nope + 1")}}
	tests := []struct {
		name       string
		migrations []v1alpha1.ValuesMigration
		values     string
		want       []string // what the error says, besides the refusal
	}{
		// No migration: today's refusal, naming no migration.
		{name: "no migrations", values: `{"size": 3}`},
		// Still refused after every migration: the migrations tried and
		// the refusal of their result.
		{name: "still refused", migrations: []v1alpha1.ValuesMigration{sizeToReplicas}, values: `{"sise": 3}`,
			want: []string{"values migrations tried: size-to-replicas", "still refused"}},
		// A migration that fails stops there, naming itself and the rule.
		{name: "a migration fails", migrations: []v1alpha1.ValuesMigration{failing, sizeToReplicas}, values: `{"size": 3}`,
			want: []string{"values migrations tried: from-nothing;", "from-nothing failed", "spec.valuesMigrations[0].rules[0]", "self.nope + 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bundle(t, replicasFiles, migrations(tt.migrations...))
			_, err := templates.ValuesMigrations(b, values(tt.values))
			if err == nil {
				t.Fatal("values accepted, want them refused")
			}
			if _, rerr := templates.MergeValues(b, values(tt.values)); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("MergeValues = %v, want the same refusal %v", rerr, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "replicas") { // the schema's own refusal
				t.Errorf("error %q does not say what the schema refuses", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if len(tt.migrations) == 0 && strings.Contains(msg, "migration") {
				t.Errorf("error %q names migrations the bundle has none of", msg)
			}
		})
	}
}

func TestValuesMigrationsCompiled(t *testing.T) {
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: v1alpha1.BundleSpec{Files: replicasFiles,
		ValuesMigrations: []v1alpha1.ValuesMigration{sizeToReplicas, {Name: "broken", Rules: []v1alpha1.ConversionRule{move("a", "b"), set("replicas", "self.size + (((")}}}}}
	_, err := templates.LoadObject(b)
	if err == nil {
		t.Fatal("a migration that does not compile loaded")
	}
	if want := "spec.valuesMigrations[1].rules[1]"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}

// TestValuesMigrationsRevision: the migrations are part of the revision
// (they change what a parent renders).
func TestValuesMigrationsRevision(t *testing.T) {
	plain := bundle(t, replicasFiles)
	migrating := bundle(t, replicasFiles, migrations(sizeToReplicas))
	if plain.Revision() == migrating.Revision() {
		t.Errorf("revision %s is the same with and without values migrations", plain.Revision())
	}
}

func TestCheckValuesMigrations(t *testing.T) {
	b := bundle(t, replicasFiles, migrations(
		// values.yaml has no size: nothing moves, and it lacks replicas.
		sizeToReplicas,
		v1alpha1.ValuesMigration{Name: "fine", Rules: []v1alpha1.ConversionRule{{Default: &v1alpha1.FieldDefault{Path: "replicas", Value: apiextensionsv1.JSON{Raw: []byte("1")}}}}},
		v1alpha1.ValuesMigration{Name: "fails", Rules: []v1alpha1.ConversionRule{set("replicas", "self.size * 2")}},
	))
	got := templates.CheckValuesMigrations(b)
	if len(got) != 2 {
		t.Fatalf("problems = %q, want two (size-to-replicas and fails)", got)
	}
	for i, want := range []string{"spec.valuesMigrations[0] (size-to-replicas) turns values.yaml into values the schemas refuse", "spec.valuesMigrations[2] (fails) fails over values.yaml"} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("problem %d = %q, want it to begin %q", i, got[i], want)
		}
	}
}
