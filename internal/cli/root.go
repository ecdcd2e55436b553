package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/bundle"
	"github.com/stencil-dev/stencil/internal/cli/bundletest"
	"github.com/stencil-dev/stencil/internal/cli/controller"
	"github.com/stencil-dev/stencil/internal/cli/diff"
	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/migrate"
	"github.com/stencil-dev/stencil/internal/cli/render"
	"github.com/stencil-dev/stencil/internal/cli/trace"
)

// ExitError is the error that carries a process exit code other than 1
// (see package exit), as main reads it.
type ExitError = exit.Error

// ExitCode returns the exit code for an error returned by Execute.
func ExitCode(err error) int { return exit.Code(err) }

// NewRootCommand returns the stencil command with every subcommand. version
// is printed by `stencil version` and written in the ApplySet tooling
// annotation by the controller.
func NewRootCommand(version string, stdin io.Reader) *cobra.Command {
	root := &cobra.Command{
		Use:   "stencil",
		Short: "Declarative composition through Go-templated ApplySets",
		Long: `stencil renders a Bundle of Go templates with a Composition's values,
server-side-applies the result as a KEP-3659 ApplySet, prunes what is no
longer rendered and reports status from the members' readiness.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	kube := genericclioptions.NewConfigFlags(true)
	kube.AddFlags(root.PersistentFlags())
	root.SetIn(stdin)
	root.AddCommand(
		newVersionCommand(version),
		controller.NewCommand(kube, version),
		render.NewCommand(kube),
		diff.NewCommand(kube),
		bundle.NewCommand(kube),
		migrate.NewCommand(kube),
		trace.NewCommand(kube),
		bundletest.NewCommand(),
	)
	return root
}

// PluginName is what the binary answers as when kubectl runs it as a
// plugin (installed as kubectl-stencil on the PATH, e.g. a symlink to
// stencil): `kubectl stencil trace ...` is `stencil trace ...`.
const PluginName = "kubectl-stencil"

// AsInvoked names root as it was invoked from argv0: as `kubectl
// stencil` when the binary is kubectl-stencil, so usage and help say
// what to type; otherwise it is left as it is.
func AsInvoked(root *cobra.Command, argv0 string) {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") == PluginName {
		if root.Annotations == nil {
			root.Annotations = map[string]string{}
		}
		root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl stencil"
	}
}

func newVersionCommand(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of stencil",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version)
			return err
		},
	}
}
