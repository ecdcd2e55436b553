// Command stencil is the stencil operator and its command-line tools; the
// commands live in internal/cli.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/stencil-dev/stencil/internal/cli"
	"github.com/stencil-dev/stencil/internal/sandbox"
)

// version is stamped at build time by the Makefile (-X main.version=...). It
// is also the version in the ApplySet tooling annotation (stencil/<version>).
var version = "v0.0.0-dev"

func main() {
	// Renders run in worker processes that are this binary re-executed
	// (see internal/sandbox): in a worker, Main serves renders and exits.
	sandbox.Main()
	root := cli.NewRootCommand(version, os.Stdin)
	cli.AsInvoked(root, os.Args[0]) // kubectl-stencil: a kubectl plugin
	err := root.Execute()
	var exit *cli.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.Err != nil) {
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	os.Exit(cli.ExitCode(err))
}
