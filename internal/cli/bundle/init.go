package bundle

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stencil-dev/stencil/internal/cli/bundle/scaffold"
)

func newInitCommand() *cobra.Command {
	var o scaffold.Options
	cmd := &cobra.Command{
		Use:   "init NAME [--kind KIND [--group GROUP] [--version VERSION]]",
		Short: "Make a new bundle folder: a Deployment and a Service, values and their schema, permissions, tests",
		Long: `init makes the bundle folder NAME (which must not exist, or be empty:
it overwrites nothing), named after its last element: Chart.yaml,
values.yaml, values.schema.json, stencil.yaml (no permissions: all it
renders is in the parent's namespace; a status output), templates/ with
_helpers.tpl, a Deployment and a Service, tests/defaults.yaml, a README
and a .helmignore. It passes stencil bundle lint and stencil test as made.

With --kind, the bundle publishes that kind (api: in stencil.yaml, in
--group, ` + scaffold.DefaultGroup + ` by default, and --version, ` + scaffold.DefaultVersion + ` by default): its
instances' spec is the values, checked by the kind's CRD.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			o.Name = filepath.Base(filepath.Clean(dir))
			if err := o.Check(); err != nil {
				return err
			}
			written, err := scaffold.Write(dir, o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "created %s:\n", dir)
			for _, f := range written {
				fmt.Fprintf(out, "  %s\n", f)
			}
			fmt.Fprintf(out, "next: stencil bundle lint %s && stencil test %s\n", dir, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Kind, "kind", "", "a kind for the bundle to publish, in CamelCase (WebApp)")
	cmd.Flags().StringVar(&o.Group, "group", "", "the published kind's API group (default "+scaffold.DefaultGroup+")")
	cmd.Flags().StringVar(&o.Version, "version", "", "the published kind's version (default "+scaffold.DefaultVersion+")")
	return cmd
}
