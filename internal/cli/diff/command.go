package diff

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/blast"
	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/flags"
)

// NewCommand returns `stencil diff`: the diff of the parents of -f, or the
// blast radius of a Bundle change (package blast), with the kubeconfig
// flags kube.
func NewCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &flags.Plan{}
	bf := &blast.Flags{}
	cmd := &cobra.Command{
		Use:   "diff (-f composition.yaml [--bundle DIR|bundle.yaml] | --bundle DIR|bundle.yaml | -f bundle.yaml)",
		Short: "Show what the controller would change in the cluster",
		Long: `diff server-side dry-run applies every object the controller would apply
for each Composition and instance of a published kind in the file (its
Bundle found as render finds it; field manager stencil, forced ownership)
and prints a
unified diff of live against would-be objects, with managedFields and other
server bookkeeping removed and Secret data masked, then the members that
would be pruned and any refusal.

With --bundle and no -f, or with -f holding one Bundle manifest (what
stencil bundle pack prints), diff shows the blast radius of that Bundle
change: it replaces the cluster's Bundle of the same name (the folder's
name or the manifest's metadata.name; --bundle-name overrides it), and
every Composition whose spec.bundle names it and every instance of the
kind it publishes (the new version's and the cluster version's), in every
namespace (-n narrows to one, -l to labels), is rendered with the new
version and dry-run applied as above. Each parent that would change is
printed as a header (# team-a/shop (Composition)) and its children:
created, changed with the changed fields (Secret values never shown),
would be pruned, would be orphaned; -o diff prints unified diffs instead.
After a parent's children diff prints the Bundle's status outputs the
change would alter, computed over the dry run's would-be members
(# Composition team-a/cm: status.outputs.phase "creating" → "ready"; an
instance's are status.phase; for a Bundle change, the new version's
outputs, as "  status.outputs.phase ..." under the parent's header): a
dry run leaves status as it is, so only outputs over spec fields move;
one it cannot compute prints nothing, and these lines do not count for
the exit status.
A summary line ends the output: 3 Compositions: 1 change, 1 unchanged,
1 would fail to render: team-a/shop templates/cm.yaml:6: .... A parent
that fails to render is reported and the others are still diffed.

Exit status: 0 when nothing would change, 1 when something would, 2 or
more on error (as kubectl diff), and for a Bundle change also when any
parent would fail to render or to apply.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := run(cmd.Context(), kube, f, bf, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code == 0 && err == nil {
				return nil
			}
			return &exit.Error{Code: code, Err: err}
		},
	}
	f.Add(cmd.Flags(), false)
	bf.Add(cmd)
	// Exit status 1 means differences: a usage error is 2, as any error.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exit.Error{Code: 2, Err: err} })
	return cmd
}

// run runs diff in the mode its flags choose and returns the
// exit status (0 no change, 1 changes, 2 failures or errors; always 2
// with an error) and the error to print, if any:
//
//   - -f with Compositions or instances: their diff (runDiff);
//   - --bundle without -f, or -f holding one Bundle manifest: the blast
//     radius of that Bundle change (blast.Run).
func run(ctx context.Context, kube *genericclioptions.ConfigFlags, f *flags.Plan, bf *blast.Flags, stdin io.Reader, out, stderr io.Writer) (int, error) {
	if f.File == "" && f.Bundle == "" {
		return 2, fmt.Errorf("diff needs -f FILE (Compositions and instances, or a Bundle) or --bundle DIR|bundle.yaml")
	}
	if err := bf.CheckOutput(); err != nil {
		return 2, err
	}
	v, stdin, err := bf.NewVersion(f, stdin)
	if err != nil {
		return 2, err
	}
	if v == nil {
		if flag := bf.BlastOnly(); flag != "" {
			return 2, fmt.Errorf("%s is for the blast radius of a Bundle change (--bundle DIR without -f, or -f bundle.yaml); %s holds Compositions or instances", flag, f.File)
		}
		changed, err := runDiff(ctx, kube, f, stdin, out, stderr)
		switch {
		case err != nil:
			return 2, err
		case changed:
			return 1, nil
		}
		return 0, nil
	}
	return blast.Run(ctx, kube, v, f, bf, out, stderr)
}
