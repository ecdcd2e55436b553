// Command stencil is the stencil operator and its command-line tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is stamped at build time by the Makefile (-X main.version=...).
var version = "v0.0.0-dev"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "stencil",
		Short:         "Declarative composition through Go-templated ApplySets",
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the version of stencil",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version)
			return err
		},
	})
	return root
}
