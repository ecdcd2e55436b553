package templates_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
)

// generating renders a password, a CA and a certificate it signs, and a
// UUID per item of .Values.items.
var generating = map[string]string{
	"values.yaml": "items: [a, b]\n",
	"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: {{ randAlphaNum 16 | quote }}
{{- $ca := genCA "db-ca" 365 }}
{{- $cert := genSignedCert "db" nil (list "db.svc") 365 $ca }}
  ca.crt: {{ $ca.Cert | quote }}
  tls.crt: {{ $cert.Cert | quote }}
  tls.key: {{ $cert.Key | quote }}
`,
	"templates/ids.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: ids
data:
{{- range .Values.items }}
  {{ . }}: {{ uuidv4 | quote }}
{{- end }}
`,
}

// renderKept renders b with kept and values, returning the objects by
// name and what the render generated anew.
func renderKept(t *testing.T, b *templates.Bundle, kept map[string]string, vals string) (map[string]*unstructured.Unstructured, map[string]string) {
	t.Helper()
	var obs templates.Observations
	objs, err := templates.Render(b, templates.Input{Composition: web, Values: values(vals), Generated: kept, Observations: &obs})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		out[o.GetName()] = o
	}
	return out, obs.Generated
}

func field(o *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(o.Object, path...)
	return v
}

// TestGeneratedValuesAreKept (issue 30 item 2): the generators render as
// Helm's (a random password, a CA and a certificate it signs, UUIDs), the
// render reports what it made, and a render given those values renders
// the same objects; a values change keeps them, and only a new call (a
// new item) makes a new value. Without them, the values differ: they are
// random.
func TestGeneratedValuesAreKept(t *testing.T) {
	b := bundle(t, generating)
	first, made := renderKept(t, b, nil, "")
	if len(made) != 5 {
		t.Fatalf("the render made %d values, want 5 (password, CA, certificate, two UUIDs): %v", len(made), made)
	}
	if p := field(first["db"], "stringData", "password"); len(p) != 16 {
		t.Errorf("password %q, want 16 characters", p)
	}
	// The certificate is signed by the CA, as genSignedCert makes it.
	ca, cert := parseCert(t, field(first["db"], "stringData", "ca.crt")), parseCert(t, field(first["db"], "stringData", "tls.crt"))
	if err := cert.CheckSignatureFrom(ca); err != nil || cert.DNSNames[0] != "db.svc" {
		t.Errorf("certificate %v not signed by the CA: %v", cert.DNSNames, err)
	}

	again, none := renderKept(t, b, made, "")
	if len(none) != 0 {
		t.Errorf("a render given every value made %d more", len(none))
	}
	if diff := cmp.Diff(first["db"].Object, again["db"].Object); diff != "" {
		t.Errorf("the Secret changed (-first +again):\n%s", diff)
	}
	if diff := cmp.Diff(first["ids"].Object, again["ids"].Object); diff != "" {
		t.Errorf("the UUIDs changed (-first +again):\n%s", diff)
	}

	grown, more := renderKept(t, b, made, `{"items":["a","b","c"]}`)
	if len(more) != 1 {
		t.Errorf("a values change adding one item made %d values, want 1", len(more))
	}
	for _, k := range []string{"a", "b"} {
		if got, want := field(grown["ids"], "data", k), field(first["ids"], "data", k); got != want {
			t.Errorf("UUID of %s changed with the values: %s → %s", k, want, got)
		}
	}
	if field(grown["db"], "stringData", "password") != field(first["db"], "stringData", "password") {
		t.Error("the password changed with a values change that does not reach it")
	}

	fresh, _ := renderKept(t, b, nil, "")
	if field(fresh["db"], "stringData", "password") == field(first["db"], "stringData", "password") {
		t.Error("two renders with no kept value gave the same password")
	}
}

func parseCert(t *testing.T, p string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		t.Fatalf("no PEM in %q", p)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ownSecret is the idiom of charts that keep a generated password: look up
// the chart's own Secret, else generate.
var ownSecret = map[string]string{
	"templates/secret.yaml": `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
{{- if $s }}
  password: {{ index $s.data "password" }}
{{- else }}
  password: {{ randAlphaNum 10 | b64enc }}
{{- end }}
  pods: {{ (lookup "v1" "Pod" .Release.Namespace "").items | len | quote }}
`,
}

// TestLookup (issue 30 item 1): lookup answers from the objects the caller
// gave, records each lookup with the hash of its answer (and whether it
// was given), and answers empty (an empty list for a list) otherwise, as
// helm template does.
func TestLookup(t *testing.T) {
	b := bundle(t, ownSecret)
	var obs templates.Observations
	objs, err := templates.Render(b, templates.Input{Composition: web, Observations: &obs})
	if err != nil {
		t.Fatal(err)
	}
	if n := field(objs[0], "data", "pods"); n != "0" {
		t.Errorf("pods %q, want 0 (an empty list)", n)
	}
	secretKey := lookup.Key{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}
	podsKey := lookup.Key{APIVersion: "v1", Kind: "Pod", Namespace: "shop"}
	want := []lookup.Read{{Key: podsKey}, {Key: secretKey}}
	if diff := cmp.Diff(want, obs.Lookups); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}

	live := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"},
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("kept-pass"))}}
	pods := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{map[string]any{"kind": "Pod"}, map[string]any{"kind": "Pod"}}}
	table := lookup.Table{secretKey.String(): live, podsKey.String(): pods}
	obs = templates.Observations{}
	objs, err = templates.Render(b, templates.Input{Composition: web, Lookups: table, Observations: &obs})
	if err != nil {
		t.Fatal(err)
	}
	if got := field(objs[0], "data", "password"); got != base64.StdEncoding.EncodeToString([]byte("kept-pass")) {
		t.Errorf("password %q, want the looked-up Secret's", got)
	}
	if n := field(objs[0], "data", "pods"); n != "2" {
		t.Errorf("pods %q, want 2", n)
	}
	if len(obs.Generated) != 0 {
		t.Errorf("with its Secret looked up, the render generated %v", obs.Generated)
	}
	for _, r := range obs.Lookups {
		if !r.Given || r.Hash == "" || r.Hash != lookup.ValueHash(table[r.Key.String()]) {
			t.Errorf("read %+v: want it given, with the hash of its answer", r)
		}
	}
	if changed := lookup.Changed(obs.Lookups, table); len(changed) != 0 {
		t.Errorf("reads changed against their own table: %v", changed)
	}
	delete(table, podsKey.String())
	if changed := lookup.Changed(obs.Lookups, table); len(changed) != 1 || changed[0].Key != podsKey {
		t.Errorf("a list that emptied: changed %v, want the pods", changed)
	}
}
