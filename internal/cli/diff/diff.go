package diff

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/prune"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/preview"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/reconcile/crds"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

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
	r := &result{}
	for _, d := range docs {
		if err := diffParent(ctx, s, pool, f.Bundle, d, out, r); err != nil {
			return r.changed, err
		}
	}
	return r.changed, errors.Join(r.errs...)
}

// result is what diffing the documents found: whether the controller
// would change anything, and the errors that kept a parent or an object
// from being diffed (the others are diffed still).
type result struct {
	changed bool
	errs    []error
}

// diffParent prints what the controller would change for the parent d
// (from the Bundle --bundle names when given): the CRDs of the chart, the
// diff of every object, the status outputs and what it would prune. An
// error it returns stops the diff; the others go to r.
func diffParent(ctx context.Context, s *session.Session, pool plan.Renderer, bundle string, d parents.Document, out io.Writer, r *result) error {
	comp, b, err := s.Resolve(ctx, bundle, d)
	if err != nil {
		r.errs = append(r.errs, err)
		return nil
	}
	p, err := s.Plan(ctx, pool, b, comp)
	if err != nil {
		var refused *plan.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintf(out, "# %s would be refused: %v\n", parents.Describe(comp), err)
			r.changed = true
			return nil
		}
		r.errs = append(r.errs, err)
		return nil
	}
	for _, line := range crdLines(ctx, s, p) {
		r.changed = true
		fmt.Fprint(out, line)
	}
	rec, err := s.RecordOf(ctx, comp)
	if err != nil {
		r.errs = append(r.errs, err)
		return nil
	}
	previews := applyset.DryRun(ctx, s.Client, p.ID, rec, s.Consent(comp, b), p.Objects)
	if err := diffPreviews(comp, previews, out, r); err != nil {
		return err
	}
	// The status outputs the change would give, where the dry run can
	// compute them: informative, not a change the apply makes, so they
	// do not set the exit status.
	lines, err := outputLines(ctx, s, comp, b, previews)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	for _, l := range lines {
		fmt.Fprint(out, l)
	}
	diffPrune(ctx, s, comp, p, out, r)
	return nil
}

// diffPreviews prints the unified diff of every dry-run apply of comp's
// objects, and the ones the controller would be refused; an error making
// a diff is returned.
func diffPreviews(comp applyset.Parent, previews []applyset.Preview, out io.Writer, r *result) error {
	for _, pv := range previews {
		var refused *applyset.AdoptionRefusedError
		if errors.As(pv.Err, &refused) {
			// What the controller would stall with: a difference, not an
			// error of diff's.
			fmt.Fprintf(out, "# %s would be refused: %v\n", parents.Describe(comp), pv.Err)
			r.changed = true
			continue
		}
		if pv.Err != nil {
			r.errs = append(r.errs, pv.Err)
			continue
		}
		text, err := preview.UnifiedDiff(pv)
		if err != nil {
			return err
		}
		if text != "" {
			r.changed = true
			fmt.Fprint(out, text)
		}
	}
	return nil
}

// diffPrune prints the members of comp's ApplySet the controller would
// prune or orphan.
func diffPrune(ctx context.Context, s *session.Session, comp applyset.Parent, p *plan.Plan, out io.Writer, r *result) {
	pruned, err := prune.Candidates(ctx, s.Client, s.Mapper, comp, p)
	if err != nil && !meta.IsNoMatchError(err) { // a kind not served yet has no instance, so nothing to prune
		r.errs = append(r.errs, fmt.Errorf("%s: list members to prune: %w", parents.Describe(comp), err))
	}
	for _, c := range pruned {
		r.changed = true
		if c.Orphan {
			fmt.Fprintf(out, "# %s would be orphaned (helm.sh/resource-policy: keep): no longer a member, not deleted\n", c.Ref)
			continue
		}
		fmt.Fprintf(out, "# %s would be pruned\n", c.Ref)
	}
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
