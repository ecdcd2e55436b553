package funcs

import (
	"errors"
	"slices"
	"text/template"

	"github.com/stencil-dev/stencil/templates/dates"
)

// nondeterministicError is the error of a nondeterministic function a
// bundle did not allow.
type nondeterministicError struct{ msg string }

func (e *nondeterministicError) Error() string { return e.msg }

// nondeterministicNames are the functions whose binding differs when a
// bundle allows nondeterministic functions.
var nondeterministicNames = func() []string {
	names := slices.Clone(nondeterministic)
	for name := range dates.Funcs(true) {
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}()

// BindNondeterministic binds the nondeterministic functions of set to g,
// allowed or refused.
func BindNondeterministic(t *template.Template, g *Guard, allow bool) {
	table := funcTables[0]()
	if allow {
		table = funcTables[1]()
	}
	f := make(template.FuncMap, len(nondeterministicNames))
	for _, name := range nondeterministicNames {
		f[name] = table[name](g)
	}
	t.Funcs(f)
}

// RefusedNondeterministic reports whether err is the refusal of a
// nondeterministic function.
func RefusedNondeterministic(err error) bool {
	var ne *nondeterministicError
	return errors.As(err, &ne)
}

// nondeterministic are sprig functions whose result changes on every call
// and cannot be kept: refused unless the bundle sets allowNondeterministic,
// since a value that changes every render makes every reconcile a write.
// The generators (random strings, keys, certificates: package
// templates/generators) are allowed: a render keeps what they make for
// its set, so they give the same value on every pass.
var nondeterministic = []string{"now", "ago"}
