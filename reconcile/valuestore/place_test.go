package valuestore_test

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/reconcile/valuestore"
)

// certificate is what sprig's genCA and genSignedCert return, as
// templates/generators keeps it.
type certificate struct{ Cert, Key string }

// certificates are a CA and a certificate it signed, made by sprig's
// genCA and genSignedCert as a template calls them.
func certificates(t *testing.T) (ca, leaf certificate) {
	t.Helper()
	tpl := template.Must(template.New("").Funcs(sprig.TxtFuncMap()).Parse(
		`{{ $ca := genCA "test-ca" 30 }}{{ list $ca (genSignedCert "web" nil (list "web.svc") 30 $ca) | toJson }}`))
	var out strings.Builder
	if err := tpl.Execute(&out, nil); err != nil {
		t.Fatal(err)
	}
	var both []certificate
	if err := json.Unmarshal([]byte(out.String()), &both); err != nil || len(both) != 2 {
		t.Fatalf("%v: %s", err, out.String())
	}
	return both[0], both[1]
}

// raw is v as templates/generators keeps it.
func raw(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func objects(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		out = append(out, u)
	}
	return out
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// indent indents every line of s by n spaces, as Helm's indent.
func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+pad)
}

// TestPlace (issue 37 item 2): a generated value is kept in the store of
// each namespace whose objects hold every piece of it, as rendered
// (plain, base64 in a Secret's data or a caBundle, inside base64 inside
// base64, a PEM block indented in a YAML block scalar); a value found
// only in a cluster-scoped object, split across namespaces, hashed,
// unused, or too short to look for, is kept by the controller. The
// public certificate of a CA in a tenant's objects does not bring the
// CA's key to the tenant's store.
func TestPlace(t *testing.T) {
	password := "Zx8rQ2pLm4Tn7Vb1Kc9Wd3Hf6Jy5Ga0E"
	ca, leaf := certificates(t)
	values := map[string]string{
		"password": raw(t, password),
		"ca":       raw(t, ca),
		"leaf":     raw(t, leaf),
		"pin":      raw(t, "4711"),
		"hashed":   raw(t, "a-value-only-its-digest-is-in-objects"),
		"unused":   raw(t, "a-value-no-object-holds-at-all"),
		"number":   raw(t, 1234567890123456789),
	}
	kubeconfig := "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " + b64(leaf.Cert) + "\n  name: web\n"
	objs := objects(t,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"platform"},"stringData":{"password":"`+password+`","pin":"4711"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ca","namespace":"default"},"data":{"ca.crt":`+raw(t, ca.Cert)+`,"digest":"0f1e2d"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tls","namespace":"web"},"data":{"tls.crt":"`+b64(leaf.Cert)+`","tls.key":"`+b64(leaf.Key)+`"}}`,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"kubeconfig","namespace":"client"},"data":{"config":"`+b64(kubeconfig)+`"}}`,
		`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"hook"},"webhooks":[{"name":"a.example.com","clientConfig":{"caBundle":"`+b64(ca.Cert)+`"}}]}`,
	)
	objs = append(objs, objects(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: files, namespace: nested}\ndata:\n  server.yaml: |\n    tls:\n      key: |\n"+indent(8, leaf.Key)+"\n      cert: |\n"+indent(8, leaf.Cert)+"\n")...)

	got := valuestore.Place(objs, values)
	where := map[string][]string{}
	for dest, vs := range got {
		for k := range vs {
			where[k] = append(where[k], dest)
		}
	}
	for k := range where {
		slices.Sort(where[k])
	}
	want := map[string][]string{
		"password": {"platform"},
		"leaf":     {"nested", "web"}, // client holds its certificate, not its key
		"ca":       {valuestore.Controller},
		"pin":      {valuestore.Controller},
		"hashed":   {valuestore.Controller},
		"unused":   {valuestore.Controller},
		"number":   {valuestore.Controller},
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(where[k], want[k]) {
			t.Errorf("%s is kept in %q, want %q", k, where[k], want[k])
		}
	}
	for dest, vs := range got {
		for k, v := range vs {
			if v != values[k] {
				t.Errorf("%s in %q: %s, want the value as kept", k, dest, v)
			}
		}
	}

	// A certificate whose base64 sits in another namespace's object: the
	// client namespace holds every piece of the leaf's certificate.
	onlyCert := map[string]string{"cert": raw(t, leaf.Cert)}
	if got := valuestore.Place(objs, onlyCert); got["client"]["cert"] == "" || got["web"]["cert"] == "" {
		t.Errorf("a certificate inside a kubeconfig inside a Secret's data: %v, want it found in client and web", slices.Sorted(maps.Keys(got)))
	}
	if got := valuestore.Place(nil, values); len(got) != 1 || len(got[valuestore.Controller]) != len(values) {
		t.Errorf("no objects: %v, want every value kept by the controller", got)
	}
}

// TestPieces: a value's pieces are its long strings, or its PEM blocks'
// body lines without the armour and the short last line.
func TestPieces(t *testing.T) {
	ca, _ := certificates(t)
	pieces := valuestore.Pieces(raw(t, ca))
	if len(pieces) < 4 {
		t.Fatalf("a CA's pieces: %d, want its certificate's and its key's body lines", len(pieces))
	}
	for _, p := range pieces {
		if strings.Contains(p, "-----") || len(p) < valuestore.MinPiece || !strings.Contains(ca.Cert+ca.Key, p) {
			t.Errorf("piece %q: want a body line of the certificate or the key", p)
		}
	}
	for _, short := range []string{raw(t, "1234"), raw(t, 42), `not json`, raw(t, nil)} {
		if p := valuestore.Pieces(short); len(p) != 0 {
			t.Errorf("Pieces(%s) = %q, want none", short, p)
		}
	}
}
