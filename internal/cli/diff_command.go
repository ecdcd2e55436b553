package cli

import (
	"context"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/blast"
	"github.com/stencil-dev/stencil/internal/cli/flags"
)

// runDiffCommand runs diff in the mode its flags choose and returns the
// exit status (0 no change, 1 changes, 2 failures or errors; always 2
// with an error) and the error to print, if any:
//
//   - -f with Compositions or instances: their diff (runDiff);
//   - --bundle without -f, or -f holding one Bundle manifest: the blast
//     radius of that Bundle change (blast.Run).
func runDiffCommand(ctx context.Context, kube *genericclioptions.ConfigFlags, f *flags.Plan, bf *blast.Flags, stdin io.Reader, out, stderr io.Writer) (int, error) {
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
