package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile"
)

// planFlags are the flags shared by render and diff.
type planFlags struct {
	file    string
	bundle  string
	offline bool
	render  renderFlags
}

func (f *planFlags) add(cmd *cobra.Command, offline bool) {
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "file holding one or more Compositions (- for stdin)")
	cmd.Flags().StringVar(&f.bundle, "bundle", "", "bundle folder or Bundle manifest to render instead of the cluster's Bundle")
	if offline {
		cmd.Flags().BoolVar(&f.offline, "offline", false, "do not contact a cluster (needs --bundle; only built-in kinds and CRDs in the bundle)")
	}
	f.render.add(cmd.Flags())
	_ = cmd.MarkFlagRequired("filename")
}

func newRenderCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "render -f composition.yaml [--bundle DIR|bundle.yaml]",
		Short: "Print the objects the controller would apply for Compositions",
		Long: `render prints, as multi-document YAML, exactly the objects the controller
would apply for each Composition in the file: same order, same namespace
placement, same ApplySet part-of label. Pipe it into
  kubectl apply --server-side --field-manager=stencil --dry-run=server -f -
to preview the real write. Without --bundle the Bundle is read from the
cluster; with --bundle and no reachable cluster (or --offline), only
built-in kinds and kinds defined by CRDs in the bundle can be placed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.Context(), kube, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.add(cmd, true)
	return cmd
}

// session connects to the cluster unless told not to; with a --bundle, an
// unreachable cluster falls back to offline rendering, with a note.
func (f *planFlags) session(kube *genericclioptions.ConfigFlags, stderr io.Writer) (*session, error) {
	if f.offline {
		if f.bundle == "" {
			return nil, fmt.Errorf("--offline needs --bundle")
		}
		return offline(kube)
	}
	s, err := connect(kube)
	if err != nil && f.bundle != "" {
		fmt.Fprintf(stderr, "note: rendering offline: %v\n", err)
		return offline(kube)
	}
	if s != nil {
		s.notes = stderr
	}
	return s, err
}

func runRender(ctx context.Context, kube *genericclioptions.ConfigFlags, f *planFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	s, err := f.session(kube, stderr)
	if err != nil {
		return err
	}
	comps, err := readCompositions(f.file, stdin, s.namespace)
	if err != nil {
		return err
	}
	pool, err := f.render.pool()
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, comp := range comps {
		plan, err := plan(ctx, s, pool, f.bundle, comp)
		if err != nil {
			return err
		}
		if err := writeYAML(stdout, plan.Objects); err != nil {
			return err
		}
	}
	return nil
}

// plan renders one Composition with the controller's own planning, in the
// same sandbox as the controller.
func plan(ctx context.Context, s *session, r reconcile.Renderer, bundleFrom string, comp *v1alpha1.Composition) (*reconcile.Plan, error) {
	b, err := loadBundle(ctx, s, bundleFrom, comp.Spec.Bundle)
	if err != nil {
		return nil, fmt.Errorf("Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	in, err := s.renderInput(ctx, comp)
	if err != nil {
		return nil, fmt.Errorf("Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	p, err := reconcile.NewPlan(ctx, r, b, in, s.mapper)
	if err != nil {
		return nil, fmt.Errorf("Composition %s/%s: %w", comp.Namespace, comp.Name, err)
	}
	return p, nil
}

// writeYAML writes objects as a multi-document YAML stream.
func writeYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
