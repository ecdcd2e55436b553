package templates

import (
	"bytes"
	"fmt"

	"github.com/stencil-dev/stencil/templates/internal/gotmpl"
)

// Bounds of one render. Exceeding one is a RenderError, never a crash.
const (
	// MaxObjects is the most objects one render may produce.
	MaxObjects = 2000
	// MaxOutputBytes is the most bytes the templates of one render may write.
	MaxOutputBytes = 16 << 20
	// MaxLoop is the longest list until, untilStep and seq may build.
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
	"now", "ago", "randAlphaNum", "randAlpha", "randAscii", "randNumeric", "randBytes", "randInt",
	"uuidv4", "shuffle", "genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "htpasswd", "bcrypt", "encryptAES",
}

// renderState is what the functions of one render share: the render's
// budget, which every include and tpl charges (Limits), and which knows the
// template set of the execution calling them (a tpl runs in a clone).
type renderState struct {
	budget *gotmpl.Budget
	// funcBytes is the render's function budget (guard.go); 0 means
	// MaxFunctionBytes.
	funcBytes int64
}

// tplName is the name tpl parses its text under: RenderErrors and Progress
// report the tpl call's own file and line instead.
const tplName = "tpl"

// funcMap returns the functions templates may call: sprig's and Helm's,
// bounded, deterministic unless allowNondeterministic, and never able to
// make a value contain itself (guardedFuncs; "# Functions" in doc.go),
// with include and tpl on st. Every function of one map charges one
// budget, MaxFunctionBytes, so a render binds a new funcMap(st, ...) on
// its clone of the parsed set. st is nil for the map a bundle is parsed
// with: its functions check each call on its own.
func funcMap(st *renderState, allowNondeterministic bool) gotmpl.FuncMap {
	var g *guard
	if st != nil {
		g = newGuard(st.funcBytes)
	}
	f := guardedFuncs(g, allowNondeterministic)
	f["include"] = g.output("include", st.include)
	f["tpl"] = g.output("tpl", st.tpl)
	return f
}

// include executes a named template (a define in a helper, or a file) and
// returns its output, as Helm's include. It charges the render's budget.
func (st *renderState) include(name string, data any) (string, error) {
	if st == nil {
		return "", fmt.Errorf("include outside a render")
	}
	var buf bytes.Buffer
	if err := st.budget.Executing().ExecuteBudget(&buf, name, data, st.budget); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// tpl renders a string as a template with the bundle's helpers, as Helm's
// tpl: in a clone of the set, so its defines stay its own. It charges the
// render's budget.
func (st *renderState) tpl(text string, data any) (string, error) {
	if st == nil {
		return "", fmt.Errorf("tpl outside a render")
	}
	t, err := st.budget.Executing().Clone()
	if err != nil {
		return "", err
	}
	if _, err := t.New(tplName).Parse(text); err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteBudget(&buf, tplName, data, st.budget); err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	return noValue(buf.String()), nil
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
