package bundle

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/chart"
)

func newPackCommand() *cobra.Command {
	var name string
	var pf pull.Flags
	cmd := &cobra.Command{
		Use:   "pack (DIR | oci://HOST/PATH:TAG | --repo URL --chart NAME [--version V])",
		Short: "Print a Bundle manifest holding a bundle folder or a chart from a registry",
		Long: `pack loads a bundle folder (values.yaml, values.schema.json, templates/,
optional Chart.yaml, kustomization.yaml and stencil.yaml) exactly as the
controller would load the Bundle, and prints the Bundle manifest. Files the
folder's .helmignore names are left out, with Helm's rules.

Given a chart in a registry instead (oci://HOST/PATH:TAG or @sha256:HEX,
or a chart repository's --repo URL --chart NAME [--version V], the same
as URL#NAME@V), pack pulls it as the controller pulls a Bundle's
spec.source (digest verified, size bounded, unpacked with the same
confinement) and prints a Bundle holding its files; --verify cosign|helm
--verify-key FILE requires its signature, as spec.source.verify does.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			arg, err := pf.BundleArg(arg)
			if err != nil {
				return err
			}
			if arg == "" {
				return fmt.Errorf("give a folder, an oci:// reference, or --repo and --chart")
			}
			b, err := loadPackable(cmd.Context(), &pf, arg, name)
			if err != nil {
				return err
			}
			if hint := openAPIHint(b.Spec().Files[templates.SchemaFileJSON]); hint != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", templates.SchemaFileJSON, hint)
			}
			spec, err := packSpec(b.Spec())
			if err != nil {
				return err
			}
			obj := &v1alpha1.Bundle{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Bundle"},
				ObjectMeta: metav1.ObjectMeta{Name: b.Name()},
				Spec:       spec,
			}
			return printObjects(cmd.OutOrStdout(), []*v1alpha1.Bundle{obj})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the Bundle (default: the folder's or the chart's name)")
	pf.Add(cmd.Flags())
	return cmd
}

// loadPackable loads what pack packs: a folder, or a chart pulled from a
// registry; the Bundle is named name, else after the folder or chart.
func loadPackable(ctx context.Context, pf *pull.Flags, arg, name string) (*templates.Bundle, error) {
	src, chartName, ok, err := pull.ParseSource(arg)
	if err != nil {
		return nil, err
	}
	if !ok {
		if name == "" {
			name = session.BundleName(arg)
		}
		return session.LoadFolder(arg, name)
	}
	if name == "" {
		name = chartName
	}
	return pf.Load(ctx, arg, name, src)
}

// packSpec is a folder's spec as a Bundle object holds it: its chart
// archives (charts/*.tgz) unpacked into charts/NAME/ files, with the
// bounds and confinement the loader reads them with (chart.ExpandArchives),
// since a Bundle's files are strings. A file that is not UTF-8 text
// cannot be held in one, so it is an error naming it.
func packSpec(spec v1alpha1.BundleSpec) (v1alpha1.BundleSpec, error) {
	files, err := chart.ExpandArchives(spec.Files)
	if err != nil {
		return spec, err
	}
	for p, c := range files {
		if !utf8.ValidString(c) {
			return spec, &templates.RenderError{File: p, Msg: "is not UTF-8 text, which a Bundle object's files must be (leave it out with .helmignore, or publish the chart to a registry and give the Bundle a spec.source, which keeps binary files)"}
		}
	}
	spec.Files = files
	return spec, nil
}
