package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/cli/blast"
	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/preview"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/crds"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

func newDiffCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
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
			code, err := runDiffCommand(cmd.Context(), kube, f, bf, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
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

// runDiff prints the differences and reports whether there are any.
func runDiff(ctx context.Context, kube *genericclioptions.ConfigFlags, f *flags.Plan, stdin io.Reader, out, stderr io.Writer) (bool, error) {
	s, err := session.Connect(kube)
	if err != nil {
		return false, err
	}
	s.Notes = stderr
	s.ControllerNamespace = f.ControllerNamespace
	docs, err := parents.Read(f.File, stdin, s.Namespace)
	if err != nil {
		return false, err
	}
	pool, err := f.Render.Pool()
	if err != nil {
		return false, err
	}
	defer pool.Close()
	changed := false
	var errs []error
	for _, d := range docs {
		comp, b, err := s.Resolve(ctx, f.Bundle, d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p, err := s.Plan(ctx, pool, b, comp)
		if err != nil {
			var refused *plan.RefusedError
			if errors.As(err, &refused) {
				fmt.Fprintf(out, "# %s would be refused: %v\n", parents.Describe(comp), err)
				changed = true
				continue
			}
			errs = append(errs, err)
			continue
		}
		for _, line := range crdLines(ctx, s, p) {
			changed = true
			fmt.Fprint(out, line)
		}
		rec, err := s.RecordOf(ctx, comp)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		previews := applyset.DryRun(ctx, s.Client, p.ID, rec, s.Consent(comp, b), p.Objects)
		for _, pv := range previews {
			var refused *applyset.AdoptionRefusedError
			if errors.As(pv.Err, &refused) {
				// What the controller would stall with: a difference, not an
				// error of diff's.
				fmt.Fprintf(out, "# %s would be refused: %v\n", parents.Describe(comp), pv.Err)
				changed = true
				continue
			}
			if pv.Err != nil {
				errs = append(errs, pv.Err)
				continue
			}
			text, err := preview.UnifiedDiff(pv)
			if err != nil {
				return changed, err
			}
			if text != "" {
				changed = true
				fmt.Fprint(out, text)
			}
		}
		// The status outputs the change would give, where the dry run can
		// compute them: informative, not a change the apply makes, so they
		// do not set the exit status.
		lines, err := outputLines(ctx, s, comp, b, previews)
		if err != nil {
			errs = append(errs, err)
		}
		for _, l := range lines {
			fmt.Fprint(out, l)
		}
		pruned, err := reconcile.PruneCandidates(ctx, s.Client, s.Mapper, comp, p)
		if err != nil && !meta.IsNoMatchError(err) { // a kind not served yet has no instance, so nothing to prune
			errs = append(errs, fmt.Errorf("%s: list members to prune: %w", parents.Describe(comp), err))
		}
		for _, c := range pruned {
			changed = true
			if c.Orphan {
				fmt.Fprintf(out, "# %s would be orphaned (helm.sh/resource-policy: keep): no longer a member, not deleted\n", c.Ref)
				continue
			}
			fmt.Fprintf(out, "# %s would be pruned\n", c.Ref)
		}
	}
	return changed, errors.Join(errs...)
}

// crdLines says, read as the user, which of the chart's crds/ CRDs the
// controller would create (absent) or, under spec.crds CreateReplace,
// update (a field the chart sets differs).
func crdLines(ctx context.Context, s *session.Session, p *plan.Plan) []string {
	var out []string
	for _, desired := range p.CRDs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(desired.GroupVersionKind())
		switch err := s.Client.Get(ctx, client.ObjectKeyFromObject(desired), live); {
		case apierrors.IsNotFound(err):
			out = append(out, fmt.Sprintf("# CustomResourceDefinition %s would be created (crds/)\n", desired.GetName()))
		case err != nil:
			out = append(out, fmt.Sprintf("# CustomResourceDefinition %s (crds/): cannot tell: %v\n", desired.GetName(), err))
		case p.ReplaceCRDs && !crds.Holds(live.Object, desired.Object):
			out = append(out, fmt.Sprintf("# CustomResourceDefinition %s would be updated (crds/, spec.crds CreateReplace)\n", desired.GetName()))
		}
	}
	return out
}
