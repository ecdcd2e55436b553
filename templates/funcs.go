package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Bounds of one render. Exceeding one is a RenderError, never a crash.
const (
	// MaxObjects is the most objects one render may produce.
	MaxObjects = 2000
	// MaxOutputBytes is the most bytes the templates of one render may write.
	MaxOutputBytes = 16 << 20
	// MaxLoop is the longest list until, untilStep, seq and repeat may build.
	MaxLoop = 10000
	// MaxIncludeDepth bounds include and tpl recursion.
	MaxIncludeDepth = 100
)

// denied are sprig functions that reach outside the bundle: the process
// environment and DNS (an exfiltration channel).
var denied = []string{"env", "expandenv", "getHostByName"}

// nondeterministic are sprig functions whose result changes on every call:
// refused unless the bundle sets allowNondeterministic, since a value that
// changes every render makes every reconcile a write (or rotates a secret).
var nondeterministic = []string{
	"now", "ago", "date_modify", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt",
	"uuidv4", "shuffle", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "htpasswd", "bcrypt", "encryptAES",
}

// renderState is what the functions of one render share.
type renderState struct {
	tmpl  *template.Template
	depth int
}

// funcMap returns the functions templates may call: sprig's text functions
// minus the denied ones, the nondeterministic ones only when allowed, bounded
// loop helpers, and Helm's include, tpl, required, fail, toYaml, fromYaml,
// fromYamlArray, toJson, fromJson and fromJsonArray. st is nil at parse time.
func funcMap(st *renderState, allowNondeterministic bool) template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range denied {
		name := name
		f[name] = func(...any) (string, error) {
			return "", fmt.Errorf("function %q is not allowed in stencil templates: templates cannot read the environment or the network", name)
		}
	}
	if !allowNondeterministic {
		for _, name := range nondeterministic {
			if _, ok := f[name]; !ok {
				continue
			}
			name := name
			f[name] = func(...any) (any, error) {
				return nil, fmt.Errorf("function %q gives a different result on every render, so every reconcile would rewrite (or rotate) what it makes; set allowNondeterministic: true on the Bundle to allow it", name)
			}
		}
	}
	f["until"] = func(n int) ([]int, error) { return boundedSeq(0, n, 1) }
	f["untilStep"] = func(start, stop, step int) ([]int, error) { return boundedSeq(start, stop, step) }
	seq := f["seq"].(func(...int) string)
	f["seq"] = func(params ...int) (string, error) {
		if len(params) > 0 && (params[len(params)-1] > MaxLoop || params[0] > MaxLoop || params[0] < -MaxLoop) {
			return "", fmt.Errorf("seq: more than %d numbers", MaxLoop)
		}
		return seq(params...), nil
	}
	f["repeat"] = func(count int, s string) (string, error) {
		if count < 0 || count*len(s) > MaxOutputBytes {
			return "", fmt.Errorf("repeat: result larger than %d bytes", MaxOutputBytes)
		}
		return strings.Repeat(s, count), nil
	}
	f["required"] = required
	f["fail"] = func(msg string) (string, error) { return "", fmt.Errorf("%s", msg) }
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["fromJsonArray"] = fromJSONArray
	f["include"] = st.include
	f["tpl"] = st.tpl
	f["lookup"] = func(...any) (map[string]any, error) {
		return nil, fmt.Errorf("lookup is not supported: rendering is pure and never reads the cluster")
	}
	return f
}

func boundedSeq(start, stop, step int) ([]int, error) {
	if step == 0 {
		return nil, fmt.Errorf("untilStep: step must not be 0")
	}
	n := (stop - start) / step
	if n > MaxLoop {
		return nil, fmt.Errorf("loop of %d items is longer than %d", n, MaxLoop)
	}
	var out []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out, nil
}

// include executes a named template (a define in a helper, or a file) and
// returns its output, as Helm's include.
func (st *renderState) include(name string, data any) (string, error) {
	if st == nil {
		return "", fmt.Errorf("include outside a render")
	}
	if st.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("include %q: nested more than %d deep (a template including itself?)", name, MaxIncludeDepth)
	}
	st.depth++
	defer func() { st.depth-- }()
	var buf bytes.Buffer
	if err := st.tmpl.ExecuteTemplate(&limitedWriter{w: &buf, n: MaxOutputBytes}, name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// tpl renders a string as a template with the bundle's helpers, as Helm's tpl.
func (st *renderState) tpl(text string, data any) (string, error) {
	if st == nil {
		return "", fmt.Errorf("tpl outside a render")
	}
	if st.depth >= MaxIncludeDepth {
		return "", fmt.Errorf("tpl nested more than %d deep", MaxIncludeDepth)
	}
	t, err := st.tmpl.Clone()
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("tpl#%d", st.depth)
	if _, err := t.New(name).Parse(text); err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	inner := &renderState{tmpl: t, depth: st.depth + 1}
	t.Funcs(template.FuncMap{"include": inner.include, "tpl": inner.tpl})
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&limitedWriter{w: &buf, n: MaxOutputBytes}, name, data); err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	return buf.String(), nil
}

func required(msg string, v any) (any, error) {
	if v == nil {
		return nil, fmt.Errorf("%s", msg)
	}
	if s, ok := v.(string); ok && s == "" {
		return nil, fmt.Errorf("%s", msg)
	}
	return v, nil
}

// toYAML renders v as YAML without a trailing newline, as Helm's toYaml;
// like Helm, an error renders as "".
func toYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]any {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(s string) []any {
	var a []any
	if err := yaml.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []any {
	var a []any
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		a = []any{err.Error()}
	}
	return a
}

// limitedWriter fails once more than n bytes are written.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, fmt.Errorf("template output larger than %d bytes", l.n)
	}
	return l.w.Write(p)
}
