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
// with include and tpl on st. Every function of one map charges g, the
// function budget (MaxFunctionBytes), so each render executes a set
// whose funcMap is its own (boundSet). With st and g nil, the functions
// check each call on its own.
func funcMap(st *renderState, g *guard, allowNondeterministic bool) gotmpl.FuncMap {
	f := guardedFuncs(g, allowNondeterministic)
	f["include"] = g.output("include", st.include)
	f["tpl"] = g.output("tpl", st.tpl)
	return f
}

// boundSet is a clone of a bundle's parsed templates whose functions are
// bound to one renderState and guard. Binding is most of the fixed cost
// of a small render, so a bundle keeps the sets of finished renders in a
// pool (Bundle.bound) and a render takes one, resetting its state and
// guard: no two renders hold the same set, and nothing of a render but
// those two survives it in the set (functions keep no other state, and
// executing a template does not change it).
type boundSet struct {
	t  *gotmpl.Template
	st *renderState
	g  *guard
}

// newBoundSet clones the bundle's parsed set and binds a funcMap of its
// own to the clone. (The parsed set itself is the first boundSet: see
// Bundle.parse.)
func (b *Bundle) newBoundSet() (*boundSet, error) {
	t, err := b.tmpl.Clone()
	if err != nil {
		return nil, err
	}
	bs := &boundSet{t: t, st: &renderState{}, g: newGuard(0)}
	t.BindFuncs(funcMap(bs.st, bs.g, b.spec.AllowNondeterministic))
	return bs, nil
}

// reset prepares the set for a render with budget: a fresh function
// budget of st.funcBytes and no costly call made.
func (bs *boundSet) reset(budget *gotmpl.Budget) {
	bs.st.budget = budget
	*bs.g = *newGuard(bs.st.funcBytes)
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
