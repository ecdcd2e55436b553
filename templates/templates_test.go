package templates_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var web = templates.CompositionInfo{Name: "web", Namespace: "shop", UID: "1234", Labels: map[string]string{"tier": "front"}}

// bundle loads a bundle from files, as a Bundle object would give them.
func bundle(t testing.TB, files map[string]string, mutate ...func(*v1alpha1.BundleSpec)) *templates.Bundle {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: v1alpha1.BundleSpec{Files: files}}
	for _, m := range mutate {
		m(&b.Spec)
	}
	loaded, err := templates.LoadObject(b)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return loaded
}

func values(s string) *apiextensionsv1.JSON {
	if s == "" {
		return nil
	}
	return &apiextensionsv1.JSON{Raw: []byte(s)}
}

// toYAML writes objects as a YAML stream, the bytes the golden files hold.
func toYAML(t testing.TB, objs []*unstructured.Unstructured) string {
	t.Helper()
	var b strings.Builder
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./templates -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func loadDir(t testing.TB, dir string) *templates.Bundle {
	t.Helper()
	b, err := templates.Load(os.DirFS(filepath.Join("testdata", dir)), templates.LoadOptions{Name: "test"})
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return b
}

// TestGolden renders the realistic bundles of testdata and compares the
// output with the golden files, byte for byte.
func TestGolden(t *testing.T) {
	for _, tt := range []struct{ dir, values, golden string }{
		{"webapp", "", "webapp.golden.yaml"},
		{"webapp", `{"autoscaling":{"enabled":false},"ingress":{"enabled":false},"replicaCount":3,"image":{"tag":"1.27"}}`, "webapp-plain.golden.yaml"},
		{"webapp-kustomize", "", "webapp-kustomize.golden.yaml"},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			objs, err := templates.Render(loadDir(t, tt.dir), templates.Input{Values: values(tt.values), Composition: web})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, toYAML(t, objs))
		})
	}
}

// TestFolderAndObjectAgree: a folder and the Bundle object packed from it
// load to the same revision and render the same bytes.
func TestFolderAndObjectAgree(t *testing.T) {
	for _, dir := range []string{"webapp", "webapp-kustomize"} {
		folder := loadDir(t, dir)
		obj, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "test"}, Spec: folder.Spec()})
		if err != nil {
			t.Fatal(err)
		}
		if folder.Revision() != obj.Revision() {
			t.Errorf("%s: revision %s from the folder, %s from the object", dir, folder.Revision(), obj.Revision())
		}
		a, errA := templates.Render(folder, templates.Input{Composition: web})
		b, errB := templates.Render(obj, templates.Input{Composition: web})
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if diff := cmp.Diff(toYAML(t, a), toYAML(t, b)); diff != "" {
			t.Errorf("%s: folder and object render differently:\n%s", dir, diff)
		}
		// Rendering twice gives the same bytes.
		again, _ := templates.Render(folder, templates.Input{Composition: web})
		if toYAML(t, a) != toYAML(t, again) {
			t.Errorf("%s: two renders differ", dir)
		}
	}
}

func TestRevision(t *testing.T) {
	files := map[string]string{"values.yaml": "a: 1\n", "templates/x.yaml": ""}
	base := bundle(t, files).Revision()
	if got := bundle(t, map[string]string{"templates/x.yaml": "", "values.yaml": "a: 1\n"}).Revision(); got != base {
		t.Errorf("revision depends on map order: %s vs %s", got, base)
	}
	changes := map[string]*templates.Bundle{
		"file content": bundle(t, map[string]string{"values.yaml": "a: 2\n", "templates/x.yaml": ""}),
		"new file":     bundle(t, map[string]string{"values.yaml": "a: 1\n", "templates/x.yaml": "", "templates/y.yaml": ""}),
		"schema": bundle(t, files, func(s *v1alpha1.BundleSpec) {
			s.Schema = values(`{"type":"object"}`)
		}),
		"options": bundle(t, files, func(s *v1alpha1.BundleSpec) { s.AllowNondeterministic = true }),
		"published api": bundle(t, files, func(s *v1alpha1.BundleSpec) {
			s.API = &v1alpha1.BundleAPI{Group: "example.com", Kind: "Foo"}
		}),
		"outputs": bundle(t, files, func(s *v1alpha1.BundleSpec) {
			s.Outputs = []v1alpha1.BundleOutput{{Name: "a", Type: "string", Value: "'a'"}}
		}),
		"readiness": bundle(t, files, func(s *v1alpha1.BundleSpec) {
			s.Readiness = []v1alpha1.ReadinessRule{{Member: "Deployment", ReadyWhen: "true"}}
		}),
	}
	for what, b := range changes {
		if b.Revision() == base {
			t.Errorf("revision did not change with the %s", what)
		}
	}
	// How the revisions reach parents is no part of them.
	policy := bundle(t, files, func(s *v1alpha1.BundleSpec) {
		s.Rollout = &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves}
		s.Revisions = &v1alpha1.RevisionPolicy{Withdrawn: []string{"x-0123456789"}}
		s.Pruning = &v1alpha1.PrunePolicy{AllowDelete: []v1alpha1.GroupKind{{Kind: "Namespace"}}}
	})
	if policy.Revision() != base {
		t.Errorf("revision changed with the rollout, revisions and pruning policies")
	}
	// Reformatting the schema JSON does not change the revision.
	s1 := bundle(t, files, func(s *v1alpha1.BundleSpec) { s.Schema = values(`{"type":"object"}`) })
	s2 := bundle(t, files, func(s *v1alpha1.BundleSpec) { s.Schema = values(`{ "type" : "object" }`) })
	if s1.Revision() != s2.Revision() {
		t.Errorf("revision changed with the schema's formatting")
	}
}

// render renders one template file with values and returns the output as
// YAML or the error.
func render(t *testing.T, tmpl, vals string, mutate ...func(*v1alpha1.BundleSpec)) (string, error) {
	t.Helper()
	files := map[string]string{"templates/t.yaml": tmpl, "templates/_helpers.tpl": `{{- define "h.name" -}}{{ .Release.Name }}-x{{- end -}}
{{- define "h.loop" -}}{{ include "h.loop" . }}{{- end -}}`,
		"values.yaml": "greeting: hello\nlist: [1, 2]\nnested: {a: 1, b: 2}\n", "files/a.txt": "line1\nline2\n", "files/b.txt": "B", "Chart.yaml": "name: demo\nversion: 0.1.0\nappVersion: \"9.9\"\n"}
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}}
	for _, m := range mutate {
		m(&b.Spec)
	}
	loaded, err := templates.LoadObject(b)
	if err != nil {
		return "", err
	}
	objs, err := templates.Render(loaded, templates.Input{Values: values(vals), Composition: web, IsUpgrade: true, Revision: 3})
	if err != nil {
		return "", err
	}
	return toYAML(t, objs), nil
}

// cm wraps a data value in a ConfigMap so each case stays one line.
func cm(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: " + data + "\n"
}

func TestFunctionsAndBuiltins(t *testing.T) {
	tests := []struct {
		name, tmpl, values, want string
	}{
		// Data
		{"values", cm(`{{ .Values.greeting | quote }}`), "", "v: hello"},
		{"composition", cm(`"{{ .Composition.Name }}/{{ .Composition.Namespace }}/{{ .Composition.UID }}/{{ .Composition.Labels.tier }}"`), "", "v: web/shop/1234/front"},
		{"bundle", cm(`{{ .Bundle.Name | quote }}`), "", "v: demo"},
		{"release", cm(`"{{ .Release.Name }} {{ .Release.Namespace }} {{ .Release.Service }} {{ .Release.IsInstall }} {{ .Release.IsUpgrade }} {{ .Release.Revision }}"`), "", "v: web shop stencil false true 3"},
		{"chart", cm(`"{{ .Chart.Name }} {{ .Chart.Version }} {{ .Chart.AppVersion }}"`), "", "v: demo 0.1.0 9.9"},
		// Every field of Helm's chart metadata, zero when Chart.yaml leaves it out.
		{"chart fields", cm(`"{{ .Chart.Type }}/{{ .Chart.Keywords }}/{{ .Chart.Deprecated }}/{{ .Chart.KubeVersion }}/{{ .Chart.Maintainers }}"`), "", "v: /[]/false//[]"},
		{"capabilities", cm(`"{{ .Capabilities.KubeVersion.Major }}.{{ .Capabilities.KubeVersion.Minor }} {{ .Capabilities.APIVersions.Has "apps/v1" }} {{ .Capabilities.APIVersions.Has "x/v9" }}"`), "", "v: 1.36 true false"},
		{"template", cm(`"{{ .Template.Name }} {{ .Template.BasePath }}"`), "", "v: templates/t.yaml templates"},
		{"files get", cm(`{{ .Files.Get "files/b.txt" | quote }}`), "", "v: B"},
		{"files lines", cm(`{{ index (.Files.Lines "files/a.txt") 1 | quote }}`), "", "v: line2"},
		{"files glob", cm(`{{ len (.Files.Glob "files/*.txt") | quote }}`), "", `v: "2"`},
		{"files bytes", cm(`{{ .Files.GetBytes "files/b.txt" | len | quote }}`), "", `v: "1"`},
		{"files outside the bundle", cm(`{{ .Files.Get "/etc/passwd" | quote }}`), "", `v: ""`},
		{"as config", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n{{ (.Files.Glob \"files/*\").AsConfig | indent 2 }}\n", "", "b.txt: B"},
		{"as secrets", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\ndata:\n{{ (.Files.Glob \"files/b.txt\").AsSecrets | indent 2 }}\n", "", "b.txt: Qg=="},
		// Helm functions
		{"include", cm(`{{ include "h.name" . | quote }}`), "", "v: web-x"},
		{"tpl", cm(`{{ tpl "{{ .Values.greeting }}-{{ include \"h.name\" . }}" . | quote }}`), "", "v: hello-web-x"},
		{"required present", cm(`{{ required "need greeting" .Values.greeting | quote }}`), "", "v: hello"},
		{"toYaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  {{- toYaml .Values.nested | nindent 2 }}\n", `{"nested":{"a":"x","b":"y"}}`, "a: x"},
		{"fromYaml", cm(`{{ (fromYaml "k: v").k | quote }}`), "", "v: v"},
		{"fromYamlArray", cm(`{{ index (fromYamlArray "[a, b]") 1 | quote }}`), "", "v: b"},
		{"toJson", cm(`{{ toJson .Values.list | quote }}`), "", `v: '[1,2]'`},
		{"fromJson", cm(`{{ (fromJson "{\"k\":\"j\"}").k | quote }}`), "", "v: j"},
		{"fromJsonArray", cm(`{{ index (fromJsonArray "[\"p\",\"q\"]") 0 | quote }}`), "", "v: p"},
		{"sprig", cm(`{{ "abc" | upper | b64enc | quote }}`), "", "v: QUJD"},
		{"sha256sum", cm(`{{ "x" | sha256sum | trunc 8 | quote }}`), "", "v: 2d711642"},
		{"until", cm(`{{ until 3 | toJson | quote }}`), "", `v: '[0,1,2]'`},
		// Values merge: maps merge, lists replace, null deletes.
		{"maps merge", cm(`{{ .Values.nested | toJson | quote }}`), `{"nested":{"b":3}}`, `v: '{"a":1,"b":3}'`},
		{"lists replace", cm(`{{ .Values.list | toJson | quote }}`), `{"list":[9]}`, `v: '[9]'`},
		{"null deletes", cm(`{{ hasKey .Values "greeting" | quote }}`), `{"greeting":null}`, `v: "false"`},
		// Output
		{"several documents and empty ones", cm("a") + "---\n---\n# only a comment\n---\n" + strings.Replace(cm("b"), "name: c", "name: d", 1), "", "name: d"},
		{"no output", `{{- if false }}x{{ end }}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render(t, tt.tmpl, tt.values)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if !strings.Contains(got, tt.want) || (tt.want == "" && got != "") {
				t.Errorf("output:\n%s\nwant it to contain %q", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	schema := func(s *v1alpha1.BundleSpec) {
		s.Schema = values(`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1,"default":1},"name":{"type":"string","minLength":2},"greeting":{"type":"string"},"list":{"type":"array","items":{"type":"integer"}},"nested":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`)
	}
	tests := []struct {
		name, tmpl, values string
		mutate             []func(*v1alpha1.BundleSpec)
		want               []string // pieces of the error
	}{
		// Templates: file and line of the failing action.
		{"parse error", "a: 1\nb: {{ .Values.x \n", "", nil, []string{"templates/t.yaml:3:", "unclosed action"}},
		{"unknown function", "a: 1\n\nb: {{ nosuch 1 }}\n", "", nil, []string{"templates/t.yaml:3:", `function "nosuch" not defined`}},
		{"required", "a: 1\nb: {{ required \"b is required\" .Values.missing }}\n", "", nil, []string{"templates/t.yaml:2:", "b is required"}},
		{"fail", "\n\n{{ fail \"stop here\" }}\n", "", nil, []string{"templates/t.yaml:3:", "stop here"}},
		{"error inside a helper", `{{ include "h.bad" . }}`, "", []func(*v1alpha1.BundleSpec){func(s *v1alpha1.BundleSpec) {
			s.Files["templates/_more.tpl"] = "{{- define \"h.bad\" -}}\n{{ fail \"helper failed\" }}\n{{- end -}}"
		}}, []string{"templates/_more.tpl:2:", "helper failed"}},
		// Output
		{"invalid YAML", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n data: x\n", "", nil, []string{"templates/t.yaml:", "not valid YAML"}},
		{"missing name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "", nil, []string{"templates/t.yaml:1:", "metadata.name"}},
		{"missing kind", "apiVersion: v1\nmetadata: {name: x}\n", "", nil, []string{"apiVersion, kind and metadata.name"}},
		{"invalid UTF-8", cm("ok") + "  bad: \"{{ printf \"%c\" 0xff | trunc 1 }}\"\n", "", nil, []string{"templates/t.yaml:7:", "not valid UTF-8"}},
		{"duplicate", cm("a") + "---\n" + cm("b"), "", nil, []string{"templates/t.yaml:8:", `ConfigMap "c" is rendered twice: by templates/t.yaml:1 and by templates/t.yaml:8`}},
		// Security and determinism
		{"env", cm(`{{ env "HOME" }}`), "", nil, []string{"templates/t.yaml:6:", `"env" is not allowed`}},
		{"expandenv", cm(`{{ expandenv "$HOME" }}`), "", nil, []string{`"expandenv" is not allowed`}},
		{"now", cm(`{{ now }}`), "", nil, []string{"templates/t.yaml:6:", `"now" gives a different result on every render`, "allowNondeterministic"}},
		// Bounds
		{"until", cm(`{{ until 100000000 | len }}`), "", nil, []string{"longer than"}},
		{"untilStep", cm(`{{ untilStep 0 100000000 1 | len }}`), "", nil, []string{"longer than"}},
		{"seq", cm(`{{ seq 100000000 | len }}`), "", nil, []string{"seq: more than"}},
		{"repeat", cm(`{{ repeat 100000000 "xxxxxxxx" | len }}`), "", nil, []string{"repeat: result larger"}},
		{"include recursion", `{{ include "h.loop" . }}`, "", nil, []string{"nested more than"}},
		{"output size", `{{ range until 9000 }}{{ repeat 4000 "x" }}{{ end }}`, "", nil, []string{"output larger than"}},
		{"object count", `{{ range until 2500 }}---
apiVersion: v1
kind: ConfigMap
metadata: {name: c{{ . }}}
{{ end }}`, "", nil, []string{"objects, more than"}},
		// Values: every violation at once, with field paths.
		{"invalid values", cm("x"), `{"replicas":-1,"name":"a","list":["no"]}`, []func(*v1alpha1.BundleSpec){schema},
			[]string{"values.replicas: Invalid value: should be greater than or equal to", "values.name", "values.list[0]"}},
		{"values not an object", cm("x"), `[1]`, nil, []string{"values: must be an object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.tmpl, tt.values, tt.mutate...)
			if err == nil {
				t.Fatalf("no error; want one containing %q", tt.want)
			}
			var re *templates.RenderError
			if !errors.As(err, &re) {
				t.Errorf("error %T is not a *RenderError: %v", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestNondeterministicOptIn(t *testing.T) {
	allow := func(s *v1alpha1.BundleSpec) { s.AllowNondeterministic = true }
	got, err := render(t, cm(`{{ randAlphaNum 12 | len | quote }}`), "", allow)
	if err != nil || !strings.Contains(got, `v: "12"`) {
		t.Errorf("with allowNondeterministic: %q, %v", got, err)
	}
}

func TestValuesDefaults(t *testing.T) {
	b := bundle(t, map[string]string{"values.yaml": "image: nginx\n"}, func(s *v1alpha1.BundleSpec) {
		s.Schema = values(`{"type":"object","properties":{"image":{"type":"string"},"replicas":{"type":"integer","default":2},"probe":{"type":"object","default":{},"properties":{"path":{"type":"string","default":"/healthz"}}}}}`)
	})
	got, err := templates.MergeValues(b, values(`{"extra":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"image": "nginx", "replicas": int64(2), "probe": map[string]any{"path": "/healthz"}, "extra": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		spec  func(*v1alpha1.BundleSpec)
		want  string
	}{
		{"bad values.yaml", map[string]string{"values.yaml": "a: [\n"}, nil, "values.yaml"},
		{"bad Chart.yaml", map[string]string{"Chart.yaml": "name: [\n"}, nil, "Chart.yaml"},
		{"template parse error", map[string]string{"templates/a.yaml": "\n{{ if }}"}, nil, "templates/a.yaml:2:"},
		{"non-structural schema", map[string]string{"values.yaml": ""}, func(s *v1alpha1.BundleSpec) {
			s.Schema = values(`{"type":"object","properties":{"a":{}}}`)
		}, "not structural"},
		{"path outside the bundle", map[string]string{"../x.yaml": ""}, nil, "inside the bundle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: v1alpha1.BundleSpec{Files: tt.files}}
			if tt.spec != nil {
				tt.spec(&b.Spec)
			}
			_, err := templates.LoadObject(b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestRendersShareNoBudget: a render reuses the function set an earlier
// render of the same bundle bound (templates.boundSet), and starts with
// the whole function budget all the same, whether the renders run one
// after another or at once, and whether the earlier one failed.
func TestRendersShareNoBudget(t *testing.T) {
	// 40 MiB of the 64 MiB function budget: two renders sharing one
	// budget would pass it.
	b := bundle(t, map[string]string{
		"templates/cm.yaml": `{{ $big := repeat 41943040 "a" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.name }}
data:
  size: {{ len $big | quote }}
{{- if .Values.fail }}{{ fail "asked to fail" }}{{ end }}
`,
	})
	for i := range 3 {
		if _, err := templates.Render(b, templates.Input{Values: values(`{"name": "x", "fail": true}`), Composition: web}); err == nil || !strings.Contains(err.Error(), "asked to fail") {
			t.Fatalf("render %d: error %v, want the template's fail", i, err)
		}
		objs, err := templates.Render(b, templates.Input{Values: values(`{"name": "x"}`), Composition: web})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if got := objs[0].Object["data"].(map[string]any)["size"]; got != "41943040" {
			t.Fatalf("render %d: size %v", i, got)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			objs, err := templates.Render(b, templates.Input{Values: values(`{"name": "c` + strconv.Itoa(i) + `"}`), Composition: web})
			if err == nil && objs[0].GetName() != "c"+strconv.Itoa(i) {
				err = fmt.Errorf("rendered %s", objs[0].GetName())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent render %d: %v", i, err)
		}
	}
}

// TestMergeValuesRemembersACopy: merging the same values again gives the
// same result, each call a map of its own (a render's templates may
// change theirs with set), and other values are merged and validated.
func TestMergeValuesRemembersACopy(t *testing.T) {
	b := loadDir(t, "webapp")
	in := values(`{"replicaCount": 3}`)
	first, err := templates.MergeValues(b, in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := templates.MergeValues(b, in)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(first, want) {
		t.Fatalf("second merge differs:\n%s", cmp.Diff(first, want))
	}
	first["replicaCount"] = "changed"
	for k := range want {
		if m, ok := want[k].(map[string]any); ok {
			m["added"] = true
		}
	}
	again, err := templates.MergeValues(b, &apiextensionsv1.JSON{Raw: []byte(`{"replicaCount": 3}`)})
	if err != nil {
		t.Fatal(err)
	}
	if again["replicaCount"] != int64(3) {
		t.Errorf("replicaCount %v: a caller's change reached the remembered values", again["replicaCount"])
	}
	for k, v := range again {
		if m, ok := v.(map[string]any); ok && m["added"] != nil {
			t.Errorf("%s: a caller's change reached the remembered values", k)
		}
	}
	if _, err := templates.MergeValues(b, values(`{"replicaCount": "three"}`)); err == nil {
		t.Error("values violating the schema merged after valid ones were remembered")
	}
	if got, err := templates.MergeValues(b, values(`{"replicaCount": 5}`)); err != nil || got["replicaCount"] != int64(5) {
		t.Errorf("other values: replicaCount %v, error %v", got["replicaCount"], err)
	}
}
