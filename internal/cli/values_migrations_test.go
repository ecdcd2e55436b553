package cli_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// migratingBundle is a bundle folder whose schema takes replicas only,
// with a values migration from size, and others given in more (YAML
// list items of valuesMigrations:).
func migratingBundle(t *testing.T, more string) string {
	t.Helper()
	return writeBundle(t, map[string]string{
		"values.yaml":        "replicas: 1\n",
		"values.schema.json": `{"type": "object", "additionalProperties": false, "required": ["replicas"], "properties": {"replicas": {"type": "integer"}}}`,
		"stencil.yaml":       "valuesMigrations:\n- name: size-to-replicas\n  rules:\n  - move: {from: size, to: replicas}\n" + more,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n",
	})
}

// TestRenderValuesMigrations: stencil render renders values the schema
// refuses through the Bundle's values migrations, as the controller
// does, and says so on stderr; values valid as they are, silently.
func TestRenderValuesMigrations(t *testing.T) {
	dir := migratingBundle(t, "")
	out, errOut, code := stencil(t, compositionYAML("default", "c", "b", `{"size": 3}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 || !strings.Contains(out, `replicas: "3"`) {
		t.Fatalf("render of old values: exit %d, stdout:\n%s\nstderr: %s\nwant replicas 3", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "values migrations size-to-replicas") {
		t.Errorf("stderr %q: want a warning naming the migration size-to-replicas", errOut)
	}
	out, errOut, code = stencil(t, compositionYAML("default", "c", "b", `{"replicas": 4}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 || !strings.Contains(out, `replicas: "4"`) || strings.Contains(errOut, "migration") {
		t.Errorf("render of new values: exit %d, stdout:\n%s\nstderr %q: want replicas 4 and no migration named", code, out, errOut)
	}
	_, errOut, code = stencil(t, compositionYAML("default", "c", "b", `{"sise": 3}`), "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 1 || !strings.Contains(errOut, "values migrations tried: size-to-replicas") {
		t.Errorf("render of values no migration rescues: exit %d, stderr %q; want exit 1 naming the migration tried", code, errOut)
	}
}

// TestLintValuesMigrations: bundle lint refuses a migration that does not
// compile, naming its rule, and warns of one that breaks values.yaml.
func TestLintValuesMigrations(t *testing.T) {
	out, errOut, code := stencil(t, "", "bundle", "lint", migratingBundle(t, "- name: drops\n  rules:\n  - delete: {path: replicas}\n"), "--offline")
	if code != 0 {
		t.Errorf("lint: exit %d, stdout:\n%s\nstderr: %s; want 0 (a warning is no problem)", code, out, errOut)
	}
	if !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "spec.valuesMigrations[1] (drops) turns values.yaml into values the schemas refuse") {
		t.Errorf("lint stderr %q: want a warning of the migration drops", errOut)
	}
	if strings.Contains(errOut, "size-to-replicas") {
		t.Errorf("lint stderr %q: size-to-replicas leaves values.yaml valid", errOut)
	}
	out, errOut, code = stencil(t, "", "bundle", "lint", migratingBundle(t, "- name: broken\n  rules:\n  - set: {path: replicas, expression: \"self.size + (((\"}\n"), "--offline")
	if code != 1 || !strings.Contains(out+errOut, "spec.valuesMigrations[1].rules[0]") {
		t.Errorf("lint of a migration that does not compile: exit %d, stdout:\n%s\nstderr: %s; want exit 1 naming spec.valuesMigrations[1].rules[0]", code, out, errOut)
	}
}

// TestDiffValuesMigrations: stencil diff renders values the Bundle's
// schema refuses through its values migrations, as the controller
// would, and says so on stderr.
func TestDiffValuesMigrations(t *testing.T) {
	ns := testenv.Namespace(t, controller.Client)
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "vmig-" + ns}, Spec: v1alpha1.BundleSpec{
		Files: map[string]string{
			"values.schema.json": `{"type": "object", "additionalProperties": false, "required": ["replicas"], "properties": {"replicas": {"type": "integer"}}}`,
			"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  replicas: \"{{ .Values.replicas }}\"\n",
		},
		ValuesMigrations: []v1alpha1.ValuesMigration{{Name: "size-to-replicas", Rules: []v1alpha1.ConversionRule{{Move: &v1alpha1.FieldMove{From: "size", To: "replicas"}}}}},
	}}
	if err := controller.Client.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = controller.Client.Delete(context.Background(), b) })
	out, errOut, code := stencil(t, compositionYAML(ns, "web", b.Name, `{"size": 3}`), "diff", "-f", "-")
	if code > 1 || !strings.Contains(out, `replicas: "3"`) {
		t.Fatalf("diff of old values: exit %d, stdout:\n%s\nstderr: %s\nwant replicas 3", code, out, errOut)
	}
	if !strings.Contains(errOut, "values migrations size-to-replicas") {
		t.Errorf("stderr %q: want a warning naming the migration size-to-replicas", errOut)
	}
}
