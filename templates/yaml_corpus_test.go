package templates

import (
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/manifest"
	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"
	yamlv2 "go.yaml.in/yaml/v2"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// The differential tests of package strictyaml on the YAML this
// repository holds and its bundles render (the corpus needs the engine,
// so they live on this side of the import).

// TestToYAMLFastMatchesMarshal is the differential test of strictyaml.MarshalFast:
// on every value of the YAML corpus of TestDecodeYAMLMatchesOracle (each
// document and every map and list in it) and on typed values, what it
// writes is byte for byte what sigs.k8s.io/yaml's Marshal writes, or it
// declines.
func TestToYAMLFastMatchesMarshal(t *testing.T) {
	var values []any
	var walk func(v any)
	walk = func(v any) {
		values = append(values, v)
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, d := range corpus(t) {
		if v, err := strictyaml.Decode([]byte(d.text), MaxOutputBytes); err == nil {
			walk(v)
		}
	}
	values = append(values,
		map[string]string{"b": "2", "a": "1", "yes": "no", "1": "x"}, []string{"on", "off", "1e3", "", " x", "a: b", "#c"},
		map[string]string(nil), []string(nil), map[string]any(nil), []any(nil), []any{},
		[]any{1.0, 3.0, math.Copysign(0, -1), 1.5, 1e21, 1e20, 9.3e18, 1e-7, 12345678901234567890.0, math.MaxFloat64, int64(math.MinInt64), 7},
		[]any{math.NaN()}, map[string]any{"x": math.Inf(1)},
		map[string]any{"é": "日本", "nel": "a\u0085b", "ctl": "a\x01b", "tab": "a\tb", "nl": "a\nb\n", "bad": "\xff"},
		struct{ A int }{1}, &struct{ B string }{"x"}, []any{map[string]any{"<<": map[string]any{"a": 1}}},
	)
	var fast int
	for _, v := range values {
		want, wantErr := slowToYAML(v)
		got, ok := strictyaml.MarshalFast(v)
		if !ok {
			continue
		}
		fast++
		if wantErr != nil {
			t.Errorf("%#v: strictyaml.MarshalFast wrote %q, Marshal fails: %v", v, got, wantErr)
		} else if got != want {
			t.Errorf("%#v: strictyaml.MarshalFast wrote\n%s\nMarshal writes\n%s", v, got, want)
		}
	}
	if fast < len(values)/2 {
		t.Errorf("strictyaml.MarshalFast wrote only %d of %d values", fast, len(values))
	}
	t.Logf("%d of %d values written the fast way, all as Marshal", fast, len(values))
}

// oracleDecode is how the rendered output was parsed before strictyaml.Decode,
// kept as the reference strictyaml.Decode must agree with: sigs.k8s.io/yaml to
// JSON (strict, aliases measured expanded first), then the API
// machinery's JSON decoding.
func oracleDecode(doc []byte, limit int64) (any, error) {
	if strings.Contains(string(doc), "*") {
		var v any
		if err := yamlv2.Unmarshal(doc, &v); err != nil {
			return nil, strictyaml.NewError(err)
		}
		m := measure.New("YAML", limit)
		if _, err := m.Measure(v); err != nil {
			if m.Deep {
				return nil, &strictyaml.Error{Msg: "nested more than 100 deep (MaxValueDepth)"}
			}
			return nil, &strictyaml.Error{Msg: "aliases expand it to more than " + itoa(limit) + " bytes"}
		}
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, strictyaml.NewError(err)
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
	// the edges of the fast reader (strictyaml/decode_fast.go)
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
	// Plain scalars of several lines (controller-gen's CRD descriptions).
	"a: x\n  y\nb: 1\n", "a:\n  d: x y\n    z  \n     w\n  e: 2\n", "a: 1\n  2\n", "a: true\n  x\n", "a: x\n\n  y\n",
	"a: x\n  # c\n  y\n", "a: x\n  # c\nb: 1\n", "a: x\n\nb: 1\n", "a: x\n  y: z\n", "a: x\n  - y\n", "a: x\n  y:\n",
	"a: x\n  'y'\n", "a: x\n  y #c\n", "a: x #c\n  y\n", "a: 'x'\n  y\n", "a: \"x\"\n  y\n", "a: [x]\n  y\n",
	"a: x\n  y\n   z\n  w\nb: 1\n", "- a: x\n    y\n  b: 1\n", "a: x\n y\n", "a: x\n  (y) `z` e.g. w, v\n", "a: x\n  y\n    b: 1\n",
	"a: x\n  \"y\", [z], {w}, &v *u !t |s >r %q @p `o` -n ?m ,l\n", "a: x\n  - y\nb: 1\n", "a: x\n  ? y\n", "a: x\n  : y\n",
	// Double-quoted scalars of several lines.
	"a: \"x\n  y\"\nb: 1\n", "a: \"x \n  y z \n   w \"\n", "a: \"x\\ny\n  \\\"z\\\" \\\\ \\/ \\t\"\n", "a: \"x\n  \"\n",
	"a: \"x\\\n  y\"\n", "a: \"x\\u0041\n  y\"\n", "a: \"x\n\n  y\"\n", "a: \"x\n  # y\"\n", "a: \"x\" y\n  z\"\n",
	"a: \"x\n  y\\\"\n", "a: \"x\n  y\" # c\n", "a: \"x\n y\"\n", "a: \"x\n  y\"\n  z\n", "a: \"x\n  y\n", "a: \"x\n  'y' [z]: w\"\n",
	"- a: \"x\n    y\"\n  b: 2\n", "a: \"x:\\n\n  \\ - y \\\"z\\\": {w}\\n\n  \\ \"\n", "a: \"x\\/y\n  z\"\n", "a:\n  b: \"1\n    2\"\n  c: \"true\n    \"\n",
	// Escapes on one line; {} and [] on the line after their key.
	"a: \"{\\\"x\\\":[1]}\"\n", "a: \"x\\\"\n", "a: \"x\\\" # c\n", "a: \"\\\\\"\n", "a: \"x\\ty\\n \\ \"\n", "a: \"\\x41\"\n", "a: [\"x\\ny\"]\n",
	"- \"x\\\"y\"\n", "a:\n  {}\nb:\n  []\n", "a:\n    {}\n  b: 1\n", "a:\n  {}\n  b: 1\n", "a:\n  {} # c\n", "-\n  {}\n- []\n", "a:\n  {}\n   x\n",
	"a: 2001-12-14\n  21:59:43.10\n", "a: x\n  ---\n", "a: x\n  ...\n", "a: ~\n  x\n", "a: null\n  x\n", "a: x\n  y\n# c\nb: 1\n",
	// Quoted keys (charts quote annotation keys).
	"metadata:\n  annotations:\n    \"helm.sh/hook\": pre-install\n    'x/y': \"z\"\n", "\"a: b\": c\n", "\"a\":b\n", "\"a\" : b\n",
	"\"a\\\"b\": c\n", "'it''s': v\n", "\"\": v\n", "\"a\": b\n\"a\": c\n", "'a\\b': c\n", "\"a #b\": c\n",
	"\"a\" # c\n", "\"a\": # c\n  b: 1\n", "\"a\":\n- x\n", "\"a\"b: c\n", "- \"a\": 1\n  \"b\": 2\n", "\"a\": |\n  x\n", "\"a\": x\n  y\n",
	"\"a\": \"x\n  y\"\n", "'a': 'b'\n'c':\n  'd': [e]\n", "\"~\": 1\n\"null\": 2\n\"0x1F\": 3\n", "\"a\":\n  {}\n",
	// Single-quoted scalars of several lines.
	"a: 'x\n  y'\nb: 1\n", "a: 'x \n  y: z \n   w '\n", "a: 'it''s\n  ''q'' \\ \"d\"'''\n", "a: 'x\n  '\n", "a: 'x''\n  y'\n",
	"a: 'x\n  y''\n", "a: 'x' y\n  z'\n", "a: 'x\n\n  y'\n", "a: 'x\n  # y'\n", "a: 'x\n y'\n", "a: 'x\n  y'\n  z\n", "a: 'x\n  y\n",
	"a: 'x\n  y' # c\n", "- a: 'x\n    y'\n  b: 2\n", "a:\n  b: '1\n    2'\n  c: 'true\n    '\n", "a: 'x\n  y\\'\n",
	// Beyond ASCII.
	"d: use “quotes” — ok\n", "d: 'é\n  日本'\n", "d: \"\u00a0x\u00a0\"\n", "d: |\n  x\ufffd\n", "d: x\u00a0\n", "d: \u00a0\n", "d: a\u2028b\n",
	"d: a\u2029b\n", "d: a\u0085b\n", "d: \ufeffx\n", "\ufeffd: x\n", "d: 😀\n", "d: a\xffb\n", "d: a\u0080b\n", "é: x\n", "d: a\x7fb\n",
	"d: [é, “x”]\n", "- é\n- “x”: y\n", "d: é # c\n", "d: \"é\\u00e9\"\n", "d: x\n  “y”\n", "d: \ud7ff\ue000\ufffd\n",
}

// TestDecodeYAMLMatchesOracle is the differential test of strictyaml.Decode: on
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
		got, gotErr := strictyaml.Decode([]byte(d.text), MaxOutputBytes)
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
		for _, d := range manifest.Split(text) {
			docs = append(docs, corpusDoc{name: name + ":" + itoa(int64(d.Line)), text: d.Text})
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

// FuzzDecodeYAML compares strictyaml.Decode with the old path on any text.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range trickyScalars {
		f.Add("k: " + s + "\n")
	}
	for _, d := range trickyDocuments {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		want, wantErr := oracleDecode([]byte(doc), 1<<20)
		got, gotErr := strictyaml.Decode([]byte(doc), 1<<20)
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
// JSON size from above (manifest.Parse skips measuring below
// MaxObjectBytes on it) for every document of the corpus.
func TestDecodeYAMLSizeBound(t *testing.T) {
	docs := append(corpus(t), corpusDoc{"escapes", "a: \"\\u2028\\u0001<>&é\\xff\"\nb: [\"\\u0000\", -1.2345678901234567e-308]\n"})
	for _, d := range docs {
		v, size, err := strictyaml.DecodeSized(d.text, MaxOutputBytes)
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
// whole corpus through strictyaml.Decode too).
func TestDecodeFastReadsRenderedOutput(t *testing.T) {
	var rendered, fast int
	for name, out := range renderedOutputs(t) {
		for _, d := range manifest.Split(out) {
			rendered++
			got, ok := strictyaml.DecodeFast(d.Text)
			if !ok {
				continue
			}
			fast++
			want, err := oracleDecode([]byte(d.Text), MaxOutputBytes)
			if err != nil {
				t.Errorf("%s:%d: read, but the old path fails: %v", name, d.Line, err)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d: (-old +fast):\n%s", name, d.Line, cmp.Diff(want, got))
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
		got, ok := strictyaml.DecodeFast(string(data))
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
// strictyaml.Decode: YAML → JSON → map.
func oldParseValuesFile(s string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	js, err := strictyaml.ToJSON([]byte(s), MaxFunctionBytes)
	if err != nil {
		ye := strictyaml.AsError(err)
		return nil, &RenderError{File: ValuesFile, Line: ye.Line, Msg: ye.Msg}
	}
	if err := utiljson.Unmarshal(js, &out); err != nil {
		return nil, &RenderError{File: ValuesFile, Msg: "values.yaml must hold an object"}
	}
	if out == nil {
		out = map[string]any{}
	}
	if err := chart.CheckValuesDepth(out); err != nil {
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
		got, gotErr := chart.ParseValues(d.text)
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

// slowToYAML is toYaml as Helm (and stencil before its fast path) writes it.
func slowToYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(data), "\n"), err
}
