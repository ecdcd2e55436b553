package templates

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stencil-dev/stencil/templates/measure"
	yamlv2 "go.yaml.in/yaml/v2"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// oracleDecode is how the rendered output was parsed before decodeYAML,
// kept as the reference decodeYAML must agree with: sigs.k8s.io/yaml to
// JSON (strict, aliases measured expanded first), then the API
// machinery's JSON decoding.
func oracleDecode(doc []byte, limit int64) (any, error) {
	if strings.Contains(string(doc), "*") {
		var v any
		if err := yamlv2.Unmarshal(doc, &v); err != nil {
			return nil, newYAMLError(err)
		}
		m := measure.New("YAML", limit)
		if _, err := m.Measure(v); err != nil {
			if m.Deep {
				return nil, &yamlError{msg: "nested more than 100 deep (MaxValueDepth)"}
			}
			return nil, &yamlError{msg: "aliases expand it to more than " + itoa(limit) + " bytes"}
		}
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, newYAMLError(err)
	}
	var out any
	if err := utiljson.Unmarshal(js, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// trickyScalars are scalars whose reading differs between YAML 1.1 and
// 1.2, between parsers, or between YAML and JSON.
var trickyScalars = []string{
	// integers in every base, with underscores, signs, overflowing
	"0", "-0", "+1", "017", "0o17", "0x1F", "0X1F", "-0x1F", "0b101", "-0b101", "0b", "1_000", "1__0",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"12345678901234567890", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
	"0xFFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF", "1:20", "190:20:30", "08", "09.5",
	// floats
	"1e3", "1E3", "1.0", "-1.0", "1.5", "-0.0", "0.1", ".5", "5.", "1e-7", "1e21", "1e20", "1.5e300", "1e400",
	"3.14159265358979323846", "6.8523015e+5", "685.230_15e+03", "9.3e18", "9.3e19",
	".inf", ".Inf", ".INF", "-.inf", "-.Inf", "+.inf", ".nan", ".NaN", ".NAN", "inf", "nan", "Infinity",
	// null
	"~", "null", "Null", "NULL", "nUll", "",
	// booleans of YAML 1.1 and strings that look like them
	"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
	"y", "Y", "n", "N", "true", "True", "TRUE", "false", "False", "FALSE", "tRue",
	// quoted and tagged
	`"123"`, `'123'`, `"true"`, `"yes"`, `"~"`, `"\x41\u00e9\U0001F600"`, `"\xff"`, `'it''s'`,
	"!!str 1", "!!str true", "!!str ~", "!!int 42", "!!int 0x1F", "!!float 1", "!!float 1.5", "!!bool yes", "!!null ~",
	"!!binary aGVsbG8=", "!!binary /w==", "!!binary 4pyTIGHDoCBsYSBtb2Rl", "!!timestamp 2001-12-14", "!custom x",
	"!!int abc", "!!float abc", "!!bool maybe", "!!binary not-base64!",
	// timestamps stay strings
	"2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2002-12-14", "2001-12-15T02:59:43.1Z", "12:30:45",
	// strings that are almost something else
	"0.0.1", "1.2.3.4", "v1", "1Gi", "500m", "0644", "-", "=", "<<", "@x", "`x", "%x", "a: b", "a #c", "'", "\"",
	"http://x/y?a=b#c", "é", "日本語", "\t", "null-ish",
}

// trickyDocuments are whole documents: block scalars, anchors, merge
// keys, keys of every type, flow style, and the errors.
var trickyDocuments = []string{
	"a: 1 # one\nb: x   #   c\nc: # null\nd: # a map follows\n  e: f # g\nh:\n- 1 # i\n- 'j # k' # l\n- \"m # n\" # o\n- [p, q] # r\n- {} # s\n- 'it''s' # t\n",
	"a: b#c\nd: 'e'#f\ng: \"h\"#i\nj: [k]#l\nm: [n] x\n",
	"a: #b\n- c\nd: | # e\n  f\ng: #\n  - h # i\n  # j\nk: '#' # l\nm: x # y # z\n",
	"- # a\n  b: c\n- d: e # f\n  g: h\n# i\n  # j\n- k: [l, 'm # n'] # o\n",
	"a: |\n  line1\n  line2\nb: >\n  folded\n  text\n\n  para\nc: |-\n  strip\nd: |+\n  keep\n\ne: x\n",
	"a: \"multi\n  line\"\nb: 'single\n\n  quoted'\nc: plain\n  continued\n",
	"base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
	"a: &a [1, 2]\nb: &b {k: v}\nc:\n  <<: [*b, {m: n}]\n  d: *a\n",
	"- &x 1\n- *x\n- {a: *x}\n",
	"1: int\n2.5: float\ntrue: bool\n0x10: hex\n1e3: exp\n.inf: inf\n-.inf: ninf\n.nan: nan\n",
	"? [a, b]\n: complex\n",
	"? {a: b}\n: complex\n",
	"~: null key\n",
	"12345678901234567890: big\n",
	"!!binary aGVsbG8=: v\n",
	"a: 1\na: 2\n",
	"a:\n  b: 1\n  c: 2\n  b: 3\n",
	"a: [1, 2\n",
	"a: b: c\n",
	"  a: 1\n b: 2\n",
	"a: *missing\n",
	"a: &x 1\nb: &x 2\nc: *x\n",
	"a: .nan\nb: .inf\n",
	"b: -.inf\na: .inf\n",
	"list: [.nan]\n",
	"- 1\n- 2\n",
	"just a string\n",
	"42\n",
	"# only a comment\n",
	"null\n",
	"{}\n",
	"[]\n",
	"\"\\xff\\xfe\": v\nk: \"a\\xffb\"\n",
	"a: !!map {b: 1}\nc: !!seq [1]\nd: !!set {x, y}\ne: !!omap [a: 1]\n",
	"a: !!int \"12\"\nb: !!float \"12\"\nc: !!str 0x1F\n",
	"%YAML 1.1\n---\na: 1\n",
	"%YAML 1.2\n---\na: yes\n",
	"a:\n- b\n-c\n",
	"a: @b\n",
	"a: {b: 1, b: 2}\n",
	"? |\n  block key\n: v\n",
	"a: 1\n...\n",
	"\ta: 1\n",
	"a: \"\\u00e9\\u2028\\u2029<>&\"\n",
	"kind: List\napiVersion: v1\nitems:\n- kind: ConfigMap\n  apiVersion: v1\n  metadata: {name: a}\n",
	// the edges of the fast reader (output_fast.go)
	"a:\n  b\n", "a: b\n  c\n", "- a\nb: 1\n", "a:\n- b\n c: d\n", "a:\n  - b\n  c: d\n", "k: 'it''s'\n", "k: 'a'b'\n",
	"k: \"a\"b\"\n", "k: [a, b]\n", "k: [a: b]\n", "k: [\"a,b\"]\n", "k: [ ]\n", "k: [a,,b]\n", "k: [a, [b]]\n",
	"k: v # c\n", "k: -\n", "k: --x\n", "k: ---x\n", "k: ...x\n", "k: .x\n", "-\n  a: 1\n", "- \n", "k:\n-\n- a\n",
	"k: 1.0\nm: 0x10\nn: .5\no: 1e3\np: -1\nq: +1\nr: 00\ns: 123456789012345678\nt: 1234567890123456789\n",
	"1.0: a\n", "key: value:\n", "a:b: c\n", "k: a#b\n", "k: x\n\n\n  # comment\nm: y\n", "k: v   \n", "a: \n  - 1\n  - 2\n",
	"- - a\n", "-  a: 1\n   b: 2\n", "-  a: 1\n  b: 2\n", "- a: 1\n  b:\n  - c\n  d: 2\n", "a:\n  b: 1\n c: 2\n",
	"a: 1\n  # indented comment\nb: 2\n", "k: a: b\n", "k: 'a\n", "k: \"\n", "k: ''\n", "k: \"\"\n", "k: y\nn: 1\nyes: no\n",
	"k: ~\nl: null\nm: Null\n", "k: 2001-12-14\nl: 2001-12-14t21:59:43.10-05:00\n", "k: 1:20\n", "k: .inf\nl: -.Inf\n",
	"k: 0b101\nl: 0o17\nm: 1_000\n", "a: {}\nb: []\nc: [{}]\n", "a: {b: c}\n", "k: x, y\nl: a[0]\nm: \"#x\"\n",
	"k: http://x/y?a=b#c\n", "k: a:b\n", "- a\n -b\n", "a:\n\n  b: 1\n", "---\na: 1\n", "a: 1\n---\n",
	"a: |\n  x\n\n  y\n\n\nb: 1\n", "a: |-\n  x\n   y\n", "a: |\n\n  x\n", "a: |\n  x  \n", "a: |\n    x\n  y\n",
	"a: |\n  x\n    \n  y\n", "a: |\n  # not a comment\n  x\n# comment\nb: 2\n", "a: |\nb: 1\n", "- a: |\n    x\n  b: 1\n",
	"a: |2\n  x\n", "a: | # c\n  x\n", "a: |\n  x\n  ", "a: |-\n  x\n\n", "a: |\n  x", "a: |-\n  x", "a:\n  b: |\n    x\n  c: y\n",
	"a: |\n  x\n b: 1\n", "a: |\n   x\n  y\n", "a: |\n  x\n  - y\n  z: 1\n", "a: |+\n  x\n\n",
}

// TestDecodeYAMLMatchesOracle is the differential test of decodeYAML: on
// every YAML document of the repository's test data, the examples and
// the testdata bundles rendered, and the tricky table above, it gives
// exactly (reflect.DeepEqual, types included) what the old path gave, or
// the same error message.
func TestDecodeYAMLMatchesOracle(t *testing.T) {
	docs := corpus(t)
	if len(docs) < 300 {
		t.Fatalf("the corpus has %d documents, expected several hundred", len(docs))
	}
	var failures, errs int
	for _, d := range docs {
		want, wantErr := oracleDecode([]byte(d.text), MaxOutputBytes)
		got, gotErr := decodeYAML([]byte(d.text), MaxOutputBytes)
		if wantErr != nil {
			errs++
			if gotErr == nil || gotErr.Error() != wantErr.Error() {
				failures++
				t.Errorf("%s: error %v, want %v\n%s", d.name, gotErr, wantErr, d.text)
			}
			continue
		}
		if gotErr != nil {
			failures++
			t.Errorf("%s: error %v, want none\n%s", d.name, gotErr, d.text)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			failures++
			t.Errorf("%s: differs from the old path (-old +new):\n%s\n%s", d.name, cmp.Diff(want, got), d.text)
		}
		if failures > 20 {
			t.Fatal("too many differences")
		}
	}
	if errs < 20 {
		t.Errorf("only %d of the %d documents are errors: the corpus must exercise the errors too", errs, len(docs))
	}
	t.Logf("%d documents agree (%d of them errors)", len(docs), errs)
}

type corpusDoc struct{ name, text string }

// corpus collects the documents TestDecodeYAMLMatchesOracle compares.
func corpus(t *testing.T) []corpusDoc {
	t.Helper()
	var docs []corpusDoc
	add := func(name, text string) {
		for _, d := range splitDocuments(text) {
			docs = append(docs, corpusDoc{name: name + ":" + itoa(int64(d.line)), text: d.text})
		}
	}
	for _, root := range []string{"testdata", "../internal/cli/testdata", "../examples", "../config"} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" && ext != ".json" && ext != ".tpl" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			add(p, string(data))
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	for name, out := range renderedOutputs(t) {
		add("rendered "+name, out)
	}
	for i, s := range trickyScalars {
		name := "scalar " + itoa(int64(i)) + " " + s
		add(name+" value", "k: "+s+"\n")
		add(name+" key", s+": v\n")
		add(name+" list", "l:\n- "+s+"\n")
		add(name+" flow", "f: ["+s+", {k: "+s+"}]\n")
		add(name+" top", s+"\n")
	}
	for i, d := range trickyDocuments {
		add("document "+itoa(int64(i)), d)
	}
	return docs
}

// renderedOutputs executes the templates of the testdata and example
// bundles and returns their raw outputs, before parsing.
func renderedOutputs(t *testing.T) map[string]string {
	t.Helper()
	var dirs []string
	for _, glob := range []string{"testdata/*/templates", "../examples/bundles/*/templates"} {
		m, _ := filepath.Glob(glob)
		for _, d := range m {
			dirs = append(dirs, filepath.Dir(d))
		}
	}
	sort.Strings(dirs)
	outs := map[string]string{}
	for _, dir := range dirs {
		b, err := Load(os.DirFS(dir), LoadOptions{Name: "corpus"})
		if err != nil {
			t.Fatalf("load %s: %v", dir, err)
		}
		in := Input{Composition: CompositionInfo{Name: "web", Namespace: "shop", UID: "1234"}}
		values, err := MergeValues(b, in.Values)
		if err != nil && strings.HasPrefix(dir, "../examples/") {
			// The example bundles that publish a kind require fields
			// (appservice's image): TestRealBundlesWithinDefaults
			// renders them with their example instances.
			t.Logf("skipped %s: %v", dir, err)
			continue
		} else if err != nil {
			t.Fatalf("values of %s: %v", dir, err)
		}
		o, err := b.execute(context.Background(), b.data(values, in), in)
		if err != nil {
			// cloudmanager requires values; its output is in
			// internal/cli/testdata all the same.
			t.Logf("skipped %s: %v", dir, err)
			continue
		}
		for name, out := range o {
			outs[dir+"/"+name] = out
		}
	}
	if len(outs) < 20 {
		t.Fatalf("rendered %d templates, expected more", len(outs))
	}
	return outs
}

// TestDecodeYAMLKeyCollision: keys that become the same string are a
// duplicate key (sigs.k8s.io/yaml kept one of them at random).
func TestDecodeYAMLKeyCollision(t *testing.T) {
	for _, doc := range []string{"1: a\n\"1\": b\n", "true: a\n\"true\": b\n", "1.0: a\n1: b\n"} {
		_, err := decodeYAML([]byte(doc), MaxOutputBytes)
		if err == nil || !strings.HasPrefix(err.Error(), "duplicate key ") {
			t.Errorf("%q: error %v, want a duplicate key", doc, err)
		}
	}
}

// TestDecodeYAMLTypes pins the unstructured form: the types the rest of
// stencil (and the API machinery) expects.
func TestDecodeYAMLTypes(t *testing.T) {
	got, err := decodeYAML([]byte("i: 3\nbig: 12345678901234567890\nf: 1.5\nintegral: 1e3\nb: yes\ns: \"3\"\nnil: ~\nl: [0x1F]\nm: {k: v}\nt: 2001-12-14\n"), MaxOutputBytes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(3), "big": float64(12345678901234567890), "f": 1.5, "integral": int64(1000), "b": true,
		"s": "3", "nil": nil, "l": []any{int64(31)}, "m": map[string]any{"k": "v"}, "t": "2001-12-14"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzDecodeYAML compares decodeYAML with the old path on any text.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range trickyScalars {
		f.Add("k: " + s + "\n")
	}
	for _, d := range trickyDocuments {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		want, wantErr := oracleDecode([]byte(doc), 1<<20)
		got, gotErr := decodeYAML([]byte(doc), 1<<20)
		if (wantErr == nil) != (gotErr == nil) {
			if gotErr != nil && strings.HasPrefix(gotErr.Error(), "duplicate key ") {
				return // a key collision, refused on purpose
			}
			t.Fatalf("error %v, old path %v", gotErr, wantErr)
		}
		if wantErr != nil {
			if gotErr.Error() != wantErr.Error() {
				t.Fatalf("error %q, old path %q", gotErr, wantErr)
			}
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("(-old +new):\n%s", cmp.Diff(want, got))
		}
	})
}

// TestDecodeYAMLSizeBound: the size decodeYAMLSized returns bounds the
// JSON size from above (parseDocuments skips measuring below
// MaxObjectBytes on it) for every document of the corpus.
func TestDecodeYAMLSizeBound(t *testing.T) {
	docs := append(corpus(t), corpusDoc{"escapes", "a: \"\\u2028\\u0001<>&é\\xff\"\nb: [\"\\u0000\", -1.2345678901234567e-308]\n"})
	for _, d := range docs {
		v, size, err := decodeYAMLSized(d.text, MaxOutputBytes)
		if err != nil {
			continue
		}
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(js)) > size {
			t.Errorf("%s: bound %d, JSON is %d bytes\n%s", d.name, size, len(js), d.text)
		}
	}
}

// TestDecodeFastReadsRenderedOutput: the fast reader takes most documents
// templates render (else it saves nothing), and each one it takes reads
// exactly as the old path (TestDecodeYAMLMatchesOracle runs it on the
// whole corpus through decodeYAML too).
func TestDecodeFastReadsRenderedOutput(t *testing.T) {
	var rendered, fast int
	for name, out := range renderedOutputs(t) {
		for _, d := range splitDocuments(out) {
			rendered++
			var c unstructuredConverter
			got, ok := decodeFast(d.text, &c)
			if !ok {
				continue
			}
			fast++
			want, err := oracleDecode([]byte(d.text), MaxOutputBytes)
			if err != nil {
				t.Errorf("%s:%d: read, but the old path fails: %v", name, d.line, err)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d: (-old +fast):\n%s", name, d.line, cmp.Diff(want, got))
			}
		}
	}
	if fast*10 < rendered*7 {
		t.Errorf("the fast reader took %d of %d rendered documents, expected most", fast, rendered)
	}
	t.Logf("the fast reader took %d of %d rendered documents", fast, rendered)
}

// TestDecodeFastReadsValuesFiles: the fast reader takes the values.yaml
// files of the testdata and example bundles, comments and all (they are
// what a cold render parses first), each one exactly as the old path.
func TestDecodeFastReadsValuesFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	examples, _ := filepath.Glob("../examples/bundles/*/values.yaml")
	files = append(files, examples...)
	if len(files) < 8 {
		t.Fatalf("found %d values.yaml files, expected the testdata and example ones", len(files))
	}
	var fast int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c unstructuredConverter
		got, ok := decodeFast(string(data), &c)
		if !ok {
			t.Logf("%s: declined", f)
			continue
		}
		fast++
		want, err := oracleDecode(data, MaxOutputBytes)
		if err != nil {
			t.Errorf("%s: read, but the old path fails: %v", f, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: (-old +fast):\n%s", f, cmp.Diff(want, got))
		}
	}
	if fast*10 < len(files)*7 {
		t.Errorf("the fast reader took %d of %d values.yaml files, expected most", fast, len(files))
	}
	t.Logf("the fast reader took %d of %d values.yaml files", fast, len(files))
}

// oldParseValuesFile is parseValuesFile as it was before it used
// decodeYAML: YAML → JSON → map.
func oldParseValuesFile(s string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	js, err := yamlToJSON([]byte(s), MaxFunctionBytes)
	if err != nil {
		ye := err.(*yamlError)
		return nil, &RenderError{File: ValuesFile, Line: ye.line, Msg: ye.msg}
	}
	if err := utiljson.Unmarshal(js, &out); err != nil {
		return nil, &RenderError{File: ValuesFile, Msg: "values.yaml must hold an object"}
	}
	if out == nil {
		out = map[string]any{}
	}
	if err := checkValuesDepth(out); err != nil {
		err.File, err.Path = ValuesFile, ""
		return nil, err
	}
	return out, nil
}

// TestParseValuesFileMatchesOldPath is the differential test of
// parseValuesFile: on every document of the corpus (the values.yaml files
// of the testdata and examples among them) it gives what the old path
// gave, types included, or the same error.
func TestParseValuesFileMatchesOldPath(t *testing.T) {
	var errs, same int
	for _, d := range corpus(t) {
		want, wantErr := oldParseValuesFile(d.text)
		got, gotErr := parseValuesFile(d.text)
		switch {
		case wantErr != nil:
			errs++
			if gotErr == nil || gotErr.Error() != wantErr.Error() {
				t.Errorf("%s: error %v, want %v\n%s", d.name, gotErr, wantErr, d.text)
			}
		case gotErr != nil:
			t.Errorf("%s: error %v, want none\n%s", d.name, gotErr, d.text)
		case !reflect.DeepEqual(got, want):
			t.Errorf("%s: differs from the old path (-old +new):\n%s", d.name, cmp.Diff(want, got))
		default:
			same++
		}
	}
	if errs < 20 || same < 300 {
		t.Errorf("%d documents agree, %d errors: the corpus must exercise both", same, errs)
	}
}

// TestInvalidUTF8 checks that rendered output that is not valid UTF-8 is
// an error naming the file and the line of the first invalid byte, where
// YAML would read it and the API server store U+FFFD in its place.
func TestInvalidUTF8(t *testing.T) {
	for _, tt := range []struct {
		name, out string
		want      string // the error, "" for none
	}{
		{"valid", "a: é日本\n", ""},
		{"first line", "a: \xff\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xff at column 4"},
		{"later line", "a: 1\nb: 2\nc: x\xc3\n", "templates/t.yaml:3: rendered output is not valid UTF-8: byte 0xc3 at column 5"},
		{"second document", "a: 1\n---\nb: \"\x80\"\n", "templates/t.yaml:3: rendered output is not valid UTF-8: byte 0x80 at column 5"},
		{"in a key", "k\xfe: v\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xfe at column 2"},
		{"surrogate", "a: \xed\xa0\x80\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xed at column 4"},
		{"in a comment", "# \xff\na: 1\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xff at column 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseDocuments("templates/t.yaml", tt.out)
			if tt.want == "" {
				if err != nil && strings.Contains(err.Error(), "UTF-8") {
					t.Fatalf("error %v, want none about UTF-8", err)
				}
				return
			}
			re, ok := err.(*RenderError)
			if !ok {
				t.Fatalf("error %T %v, want a *RenderError", err, err)
			}
			if re.Error() != tt.want {
				t.Errorf("error %q\nwant      %q", re, tt.want)
			}
		})
	}
}

// TestDuplicateObjectsNameBothTemplates checks that two documents that are
// one object once placed in the Composition's namespace are refused, with
// the file and line of each.
func TestDuplicateObjectsNameBothTemplates(t *testing.T) {
	cm := func(ns string) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s
	}
	for _, tt := range []struct {
		name    string
		outputs map[string]string // by template, rendered in name order
		want    string            // the error, "" for none
	}{
		{"one template twice", map[string]string{"templates/a.yaml": cm("") + "---\n" + cm("")},
			`templates/a.yaml:6: ConfigMap "x" is rendered twice: by templates/a.yaml:1 and by templates/a.yaml:6`},
		{"with and without its namespace", map[string]string{"templates/a.yaml": "# a\n" + cm(""), "templates/b.yaml": "---\n" + cm("shop")},
			`templates/b.yaml:2: ConfigMap "x" is rendered twice (once with a namespace, once without): by templates/a.yaml:1 and by templates/b.yaml:2`},
		{"in a List", map[string]string{"templates/a.yaml": cm("shop"), "templates/b.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"},
			`templates/b.yaml:1: ConfigMap "x" is rendered twice (once with a namespace, once without): by templates/a.yaml:1 and by templates/b.yaml:1`},
		{"a cluster-scoped kind in two namespaces", map[string]string{"templates/a.yaml": strings.Replace(cm("a"), "ConfigMap", "Namespace", 1), "templates/b.yaml": strings.Replace(cm("b"), "ConfigMap", "Namespace", 1)},
			`templates/b.yaml:1: Namespace "x" is rendered twice (in namespaces "a" and "b" of a cluster-scoped kind): by templates/a.yaml:1 and by templates/b.yaml:1`},
		{"another namespace", map[string]string{"templates/a.yaml": cm(""), "templates/b.yaml": cm("other")}, ""},
		{"another kind", map[string]string{"templates/a.yaml": cm(""), "templates/b.yaml": strings.Replace(cm(""), "ConfigMap", "Secret", 1)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			names := make([]string, 0, len(tt.outputs))
			for n := range tt.outputs {
				names = append(names, n)
			}
			sort.Strings(names)
			units := make([]unit, len(names))
			for i, n := range names {
				units[i] = unit{file: n, key: n}
			}
			_, err := parseOutputs(units, tt.outputs, "shop")
			got := ""
			if err != nil {
				if _, ok := err.(*RenderError); !ok {
					t.Fatalf("error %T %v, want a *RenderError", err, err)
				}
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error %q\nwant      %q", got, tt.want)
			}
		})
	}
}

// TestDocumentsEndAsHelms: a template's documents are read as Helm reads
// them (split at lines starting with "---", each followed by a newline),
// so a block scalar keeps the line breaks `helm template` gives it. The
// wants are what Helm v4.3.1 rendered from these outputs.
func TestDocumentsEndAsHelms(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n"
	doc := func(name, data string) string { return strings.Replace(cm, "%s", name, 1) + data }
	for _, tt := range []struct {
		name, out string
		want      []string // data.k of each object
		lines     []int
	}{
		{"a block scalar ends the output", doc("a", "  k: |\n    {}"), []string{"{}\n"}, []int{1}},
		{"keep chomping at the end", doc("b", "  k: |+\n    x\n\n\n\n"), []string{"x\n\n\n\n\n"}, []int{1}},
		{"clip chomping before a separator", doc("e", "  k: |\n    y\n  \n  \n") + "---\n" + doc("f", "  k: |-\n    z"), []string{"y\n", "z"}, []int{1, 11}},
		{"what follows the dashes begins the next document", "\n\n" + doc("g", "  k: v\n") + "--- # a comment\n" + doc("h", "  k: w\n") + "---\n\n", []string{"v", "w"}, []int{3, 9}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, lines, err := parseDocuments("templates/t.yaml", tt.out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Object["data"].(map[string]any)["k"].(string))
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("data.k (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.lines, lines); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
		})
	}
}
