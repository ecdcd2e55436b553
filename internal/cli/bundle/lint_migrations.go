package bundle

import (
	"fmt"
	"io"

	"github.com/stencil-dev/stencil/templates"
)

// lintValuesMigrations warns, on stderr, of each values migration of b
// (stencil.yaml's valuesMigrations) that fails over values.yaml or turns
// it into values the schemas refuse (templates.CheckValuesMigrations).
// A migration runs only over values the schemas refuse, so these are
// warnings, not problems; one that does not compile is a problem already
// (the bundle does not load, naming spec.valuesMigrations[i].rules[j]).
func lintValuesMigrations(dir string, b *templates.Bundle, stderr io.Writer) {
	for _, p := range templates.CheckValuesMigrations(b) {
		fmt.Fprintf(stderr, "warning: %s: %s: %s\n", dir, templates.OptionsFile, p)
	}
}
