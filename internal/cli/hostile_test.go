package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secret is a value a tenant gives that must never appear in a message.
const secret = "s3cr3t-tenant-value"

// hostileCase is a bundle or values built to hang, exhaust or crash a
// renderer, run a program, reach out of the bundle, or leak a value.
type hostileCase struct {
	name string
	// tmpl is templates/<name>.yaml; files are more bundle files.
	tmpl  string
	files map[string]string
	// values are the Composition's spec.values (JSON).
	values string
	// want is a part of the error that locates the problem (file or field
	// path); empty means templates/<name>.yaml.
	want string
}

// fanOut defines f0 … f<n> where each calls the next twice with call
// ({{ include }} or {{ template }}): 2^n calls in all.
func fanOut(call string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{{- define "f%d" -}}`, i)
		if call == "include" {
			fmt.Fprintf(&b, `{{ include "f%d" . }}{{ include "f%d" . }}`, i+1, i+1)
		} else {
			fmt.Fprintf(&b, `{{ template "f%d" . }}{{ template "f%d" . }}`, i+1, i+1)
		}
		b.WriteString("{{- end -}}\n")
	}
	fmt.Fprintf(&b, `{{- define "f%d" -}}x{{- end -}}`, n)
	return b.String()
}

// nested is a JSON value nested depth deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
}

const cyclic = `{{ $d := dict "k" "v" }}{{ $_ := set $d "self" $d }}`

func hostileCases() []hostileCase {
	loop3 := `{{ range until 10000 }}{{ range until 10000 }}{{ range until 10000 }}{{ end }}{{ end }}{{ end }}`
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n"
	return []hostileCase{
		// Hangs: loops, fan-out and recursion the bounds must stop.
		{name: "range-int", tmpl: `{{ range 3000000000 }}x{{ end }}`},
		{name: "nested-until", tmpl: loop3},
		{name: "include-fanout", tmpl: `{{ include "f0" . }}`, files: map[string]string{"templates/_fan.tpl": fanOut("include", 40)}, want: "templates/"},
		{name: "template-fanout", tmpl: `{{ template "f0" . }}`, files: map[string]string{"templates/_fan.tpl": fanOut("template", 40)}, want: "templates/"},
		{name: "include-self", tmpl: `{{ define "self" }}{{ include "self" . }}{{ end }}{{ include "self" . }}`},
		{name: "template-self", tmpl: `{{ define "tself" }}{{ template "tself" . }}{{ end }}{{ template "tself" . }}`},
		{name: "range-tenant-count", tmpl: `{{ range int .Values.count }}{{ . }}{{ end }}`, values: `{"count":3000000000}`},
		{name: "until-tenant-count", tmpl: `{{ range until (int .Values.count) }}{{ . }}{{ end }}`, values: `{"count":2000000000}`},
		{name: "tpl-tenant-loop", tmpl: `{{ tpl .Values.expr . }}`, values: `{"expr":"` + loop3 + `"}`},
		{name: "tpl-self", tmpl: `{{ tpl .Values.expr . }}`, values: `{"expr":"{{ tpl .Values.expr . }}"}`},
		{name: "untilstep-overflow", tmpl: `{{ range untilStep 0 9223372036854775807 1 }}{{ end }}`},
		{name: "untilstep-negative", tmpl: `{{ range untilStep 0 -9223372036854775807 -1 }}{{ end }}`},
		{name: "untilstep-wrap", tmpl: `{{ range untilStep 9223372036854775800 9223372036854775807 3 }}{{ end }}{{ range untilStep -9223372036854775807 9223372036854775807 1 }}{{ end }}`},
		{name: "seq-negative", tmpl: `{{ seq 0 -1 -50000000 }}`},
		{name: "seq-huge", tmpl: `{{ seq 1 100000000 }}`},
		{name: "derive-password", tmpl: `{{ range until 10000 }}{{ derivePassword 1 "long" "password" "user" "example.com" }}{{ end }}`},
		// Crashes: memory and stack.
		{name: "printf-doubling", tmpl: `{{ $s := "xxxxxxxx" }}{{ range until 64 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`},
		{name: "cat-doubling", tmpl: `{{ $s := "xxxxxxxx" }}{{ range until 64 }}{{ $s = cat $s $s }}{{ end }}{{ len $s }}`},
		{name: "replace-growth", tmpl: `{{ $s := "xx" }}{{ range until 64 }}{{ $s = replace "x" "xxxx" $s }}{{ end }}{{ len $s }}`},
		{name: "b64-growth", tmpl: `{{ $s := "xxxxxxxxxxxx" }}{{ range until 200 }}{{ $s = b64enc $s }}{{ end }}{{ len $s }}`},
		{name: "repeat-huge", tmpl: `{{ repeat 1000000000 "xxxxxxxx" }}`},
		{name: "repeat-negative", tmpl: `{{ repeat -1 "x" }}{{ repeat 9223372036854775807 "xx" }}`},
		{name: "nindent-huge", tmpl: `{{ "a\nb" | nindent 1000000000 }}`},
		{name: "indent-huge", tmpl: `{{ "a\nb\nc" | indent 2000000000 }}`},
		{name: "list-of-megabytes", tmpl: `{{ $l := list }}{{ range until 10000 }}{{ $l = append $l (repeat 1000000 "x") }}{{ end }}{{ len $l }}`},
		{name: "dict-growth", tmpl: `{{ $d := dict }}{{ range $i := until 100000000 }}{{ $_ := set $d (toString $i) (repeat 100 "x") }}{{ end }}{{ len $d }}`},
		{name: "join-huge", tmpl: `{{ $l := list }}{{ range until 5000 }}{{ $l = append $l (repeat 100000 "x") }}{{ end }}{{ join "," $l | len }}`},
		{name: "cyclic-print", tmpl: cyclic + `{{ $d }}`},
		{name: "cyclic-toyaml", tmpl: cyclic + `{{ toYaml $d }}`},
		{name: "cyclic-tojson", tmpl: cyclic + `{{ toJson $d }}`},
		{name: "cyclic-deepcopy", tmpl: cyclic + `{{ deepCopy $d }}`},
		{name: "cyclic-list", tmpl: `{{ $d := dict }}{{ $_ := set $d "l" (list $d $d) }}{{ toYaml $d }}`},
		{name: "deep-values-toyaml", tmpl: `{{ toYaml .Values }}`, values: nested(9990), want: "values"},
		{name: "deep-fromjson", tmpl: `{{ $v := fromJson .Values.doc }}{{ toYaml $v }}`, values: `{"doc":` + fmt.Sprintf("%q", nested(5000)) + `}`},
		{name: "fromyaml-aliases", tmpl: `{{ $v := fromYaml .Files.bomb }}{{ toYaml $v }}`, files: map[string]string{"bomb": billionLaughs()}},
		// Output: size, count, duplicates, lists.
		{name: "object-too-large", tmpl: fmt.Sprintf(cm, "big") + `data:\n  a: {{ repeat 2000000 "x" }}\n`},
		{name: "too-many-objects", tmpl: `{{ range $i := until 3000 }}` + "---\n" + fmt.Sprintf(cm, "cm-{{ $i }}") + `{{ end }}`},
		{name: "output-too-large", tmpl: `{{ range $i := until 40 }}` + "---\n" + fmt.Sprintf(cm, "cm-{{ $i }}") + `data:\n  a: {{ repeat 1000000 "x" }}\n{{ end }}`},
		{name: "duplicate-key", tmpl: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: one\n  a: two\n"},
		{name: "duplicate-object", tmpl: fmt.Sprintf(cm, "twice") + "---\n" + fmt.Sprintf(cm, "twice")},
		{name: "duplicate-after-namespace", tmpl: fmt.Sprintf(cm, "placed") + "---\n" + fmt.Sprintf(cm, "placed") + "  namespace: team-a\n", want: "placed"},
		{name: "list-cluster-admin", tmpl: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: rbac.authorization.k8s.io/v1\n  kind: ClusterRoleBinding\n  metadata: {name: pwn}\n  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n  subjects: [{kind: Group, name: system:authenticated, apiGroup: rbac.authorization.k8s.io}]\n", want: "ClusterRoleBinding"},
		{name: "cluster-scoped", tmpl: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: pwn\n", want: "ClusterRole"},
		{name: "other-namespace", tmpl: fmt.Sprintf(cm, "x") + "  namespace: kube-system\n", want: "kube-system"},
		// Non-determinism and reaching outside.
		{name: "date-of-string", tmpl: `{{ date "2006-01-02" "not a time" }}`},
		{name: "now", tmpl: `{{ now }}`},
		{name: "rand", tmpl: `{{ randAlphaNum 8 }}`},
		{name: "uuid", tmpl: `{{ uuidv4 }}`},
		{name: "env", tmpl: `{{ env "HOME" }}`},
		{name: "expandenv", tmpl: `{{ expandenv "$HOME" }}`},
		{name: "lookup", tmpl: `{{ lookup "v1" "Secret" "kube-system" "" }}`},
		{name: "kustomize-scp-remote", tmpl: fmt.Sprintf(cm, "k"), files: map[string]string{"kustomization.yaml": "resources:\n- templates/kustomize-scp-remote.yaml\n- git@github.com:org/repo\n"}, want: "kustomization.yaml"},
		{name: "kustomize-upper-remote", tmpl: fmt.Sprintf(cm, "k"), files: map[string]string{"kustomization.yaml": "resources:\n- GITHUB.COM/org/repo?ref=v1\n"}, want: "kustomization.yaml"},
		{name: "kustomize-openapi-url", tmpl: fmt.Sprintf(cm, "k"), files: map[string]string{"kustomization.yaml": "openapi:\n  path: http://127.0.0.1:1/schema.json\nresources:\n- templates/kustomize-openapi-url.yaml\n"}, want: "kustomization.yaml"},
		{name: "kustomize-escape", tmpl: fmt.Sprintf(cm, "k"), files: map[string]string{"kustomization.yaml": "resources:\n- ../../etc/passwd\n"}, want: "kustomization.yaml"},
		{name: "kustomize-exec-function", tmpl: fmt.Sprintf(cm, "k"), files: map[string]string{"kustomization.yaml": "resources:\n- templates/kustomize-exec-function.yaml\ntransformers:\n- fn.yaml\n", "fn.yaml": "apiVersion: x/v1\nkind: F\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n"}, want: "kustomization.yaml"},
		// Plain mistakes: precise locations, no values in messages.
		{name: "parse-error", tmpl: "a: {{ .Values.x \n", want: "templates/parse-error.yaml:1"},
		{name: "fail", tmpl: "a: 1\n{{ fail \"stop here\" }}\n", want: "templates/fail.yaml:2"},
		{name: "required", tmpl: "a: {{ required \"x is required\" .Values.x }}\n", want: "templates/required.yaml:1"},
		{name: "missing-define", tmpl: `{{ include "nope" . }}`},
		{name: "values-not-object", tmpl: fmt.Sprintf(cm, "ok"), values: `[1,2]`, want: "values"},
		{name: "schema-violation-secret", tmpl: fmt.Sprintf(cm, "ok"), values: `{"password":"` + secret + `"}`, want: "values.password",
			files: map[string]string{"values.schema.json": `{"type":"object","properties":{"password":{"type":"string","maxLength":4,"pattern":"^[a-z]+$"}}}`}},
		{name: "schema-enum-secret", tmpl: fmt.Sprintf(cm, "ok"), values: `{"mode":"` + secret + `"}`, want: "values.mode",
			files: map[string]string{"values.schema.json": `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]}}}`}},
		{name: "duplicate-values-key", tmpl: fmt.Sprintf(cm, "ok"), files: map[string]string{"values.yaml": "a: 1\na: 2\n"}, want: "values.yaml"},
	}
}

// billionLaughs is YAML whose aliases expand to 10^9 items.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	return b.String()
}

// TestHostileRender runs every hostile case through `stencil render
// --offline`: each must end, with exit code 1, an error that locates the
// problem, nothing printed to stdout, and no tenant value in the message.
func TestHostileRender(t *testing.T) {
	cases := hostileCases()
	if len(cases) < 50 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"templates/" + tc.name + ".yaml": tc.tmpl}
			for p, c := range tc.files {
				files[p] = c
			}
			for p, c := range files {
				if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			values := tc.values
			if values == "" {
				values = "{}"
			}
			comp := compositionYAML("team-a", "hostile", "hostile", values)
			out, errOut, code := stencil(t, comp, "render", "-f", "-", "--bundle", dir, "--offline", "--render-timeout", "2s", "--render-memory", "256Mi")
			want := tc.want
			if want == "" {
				want = "templates/" + tc.name + ".yaml"
			}
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("exit %d, stderr %q: want exit 1 and an error naming %q", code, errOut, want)
			}
			if strings.TrimSpace(out) != "" {
				t.Errorf("stdout holds %d bytes, want nothing for a failed render", len(out))
			}
			if strings.Contains(errOut, secret) {
				t.Errorf("stderr %q repeats the tenant's value", errOut)
			}
		})
	}
}
