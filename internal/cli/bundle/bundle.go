package bundle

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"
)

// NewCommand returns `stencil bundle` and its subcommands init, pack,
// lint, rbac and schema, with the kubeconfig flags kube (lint's cluster).
func NewCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "bundle", Short: "Author bundles: make a new one, pack a folder into a Bundle, lint it, print the RBAC of the kind it publishes, infer a values schema"}
	cmd.AddCommand(newInitCommand(), newPackCommand(), newLintCommand(kube), newRBACCommand(), newSchemaCommand())
	return cmd
}

// printObjects writes objects as YAML documents, without the empty
// creationTimestamp and status a typed object marshals.
func printObjects[T runtime.Object](w io.Writer, objs []T) error {
	for i, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		delete(u, "status")
		unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
		data, err := yaml.Marshal(u)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
