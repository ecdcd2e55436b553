package bundle

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

func newRBACCommand() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "rbac DIR",
		Short: "Print the ClusterRoles of the kind a bundle folder publishes",
		Long: `rbac prints, as YAML, the ClusterRoles a cluster admin applies for the kind
a bundle folder publishes (api: in its stencil.yaml):

  stencil:published:<plural>.<group>       aggregated into the controller's
                                           stencil-apply role: get, list, watch,
                                           update and patch the instances and
                                           their status, so stencil serves them,
                                           and update, patch and delete, by
                                           name, the kind's binding of the
                                           admission policy stencil-access
  stencil:published:<plural>.<group>-edit  aggregated into admin and edit:
                                           tenants create and change instances
  stencil:published:<plural>.<group>-view  aggregated into view: read them

To let only some tenants create instances, drop the aggregation labels of
the -edit role and bind it with RoleBindings instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				name = session.BundleName(args[0])
			}
			b, err := session.LoadFolder(args[0], name)
			if err != nil {
				return err
			}
			api := b.Spec().API
			if api == nil {
				return fmt.Errorf("%s: the bundle publishes no kind: its %s has no api field", args[0], templates.OptionsFile)
			}
			if errs := publish.Validate(*api); len(errs) > 0 {
				problems := folderProblems(&publish.Error{Reason: publish.ReasonInvalidAPI, Errs: errs})
				return fmt.Errorf("%s: the api is invalid: %s", args[0], strings.Join(problems, "; "))
			}
			return printObjects(cmd.OutOrStdout(), publish.ClusterRoles(name, *api))
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the Bundle (default: the folder's name)")
	return cmd
}
