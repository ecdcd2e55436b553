package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/controller"
)

// ExitError carries a process exit code other than 1 (stencil diff exits 1
// when there are differences and 2 on errors, as kubectl diff does).
type ExitError struct {
	// Code is the process exit code.
	Code int
	// Err is the error to print, if any.
	Err error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the exit code for an error returned by Execute.
func ExitCode(err error) int {
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	if err != nil {
		return 1
	}
	return 0
}

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
		newRenderCommand(kube),
		newDiffCommand(kube),
		newBundleCommand(kube),
	)
	return root
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
