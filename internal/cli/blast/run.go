package blast

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/prune"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/preview"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates"
)

// blastParallel is the most parents looked at concurrently; their renders
// are also bounded by the render pool's workers (at most one per core).
const blastParallel = 4

// outcome is what a Bundle change does to one parent.
type outcome int

const (
	unchanged   outcome = iota
	changes             // some child is created, changed, pruned or orphaned
	leftAlone           // the new version no longer serves the instance
	renderFails         // the render fails or is refused: the parent would stall
	applyFails          // the API server would refuse a child
	unchecked           // an error kept diff from telling
	pinned              // the parent pins a revision: it does not move
	held                // the new version refuses its values: it stays on its revision
)

// childChange is one child a Bundle change changes.
type childChange struct {
	// ref names the child as Kind/namespace/name (Kind/name when
	// cluster-scoped).
	ref string
	// what happens to it: "created", "changed", "would be pruned", ...
	what string
	// fields are the changed fields of a changed child.
	fields []applyset.FieldChange
	// diff is the unified diff of live against would-be (-o diff).
	diff string
}

// blastResult is what a Bundle change does to one target.
type blastResult struct {
	target
	outcome  outcome
	children []childChange
	// failures say why it would fail: a render error with file:line, a
	// refusal, the API server's refusal of a child.
	failures []string
	// outputs are the Bundle's status outputs the new version would
	// change, where the dry run can compute them ("status.outputs.phase
	// 1 → 2"): shown, but not a change of the outcome's.
	outputs []string
	err     error
}

// evaluator renders parents with the new version of a Bundle, as the
// controller would, and previews the result.
type evaluator struct {
	s        *session.Session
	renderer plan.Renderer
	bundle   *templates.Bundle
	caps     *templates.Capabilities
	diffs    bool
	waves    *waveHeader
	// cluster is the cluster's Bundle (nil: none yet); holding is
	// whether the new version lets a parent whose values it refuses stay
	// on its revision (spec.revisions.holding, the new version's or the
	// cluster Bundle's).
	cluster *v1alpha1.Bundle
	holding bool

	mu sync.Mutex
	// revisions are the cluster Bundle's revisions loaded (staysWithin),
	// by name; noted the notes written.
	revisions map[string]*templates.Bundle
	noted     map[string]bool
}

// Run shows, for every parent the new version v of a Bundle reaches,
// what the controller would change, then a summary, with the render
// limits and controller namespace of f. It returns the exit status (0
// no change, 1 changes, 2 when a parent would fail to render or apply,
// or could not be checked; always 2 with an error) and the errors that
// kept parents from being checked.
func Run(ctx context.Context, kube *genericclioptions.ConfigFlags, v *Version, f *flags.Plan, bf *Flags, out, stderr io.Writer) (int, error) {
	sel, err := labels.Parse(bf.selector)
	if err != nil {
		return 2, fmt.Errorf("--selector: %w", err)
	}
	limits, err := f.Render.Limits()
	if err != nil {
		return 2, err
	}
	s, err := session.Connect(kube)
	if err != nil {
		return 2, err
	}
	s.Notes = stderr
	s.ControllerNamespace = f.ControllerNamespace
	b, err := v.load(ctx, s)
	if err != nil {
		return 2, fmt.Errorf("%s: %w", v.from, err)
	}
	cluster, err := clusterBundleOf(ctx, s, v.name)
	if err != nil {
		return 2, err
	}
	var clusterAPI *v1alpha1.BundleAPI
	if cluster != nil {
		clusterAPI = cluster.Spec.API
	}
	sc := scope{selector: sel}
	if kube.Namespace != nil {
		sc.namespace = *kube.Namespace
	}
	targets, err := findTargets(ctx, s, v.name, b.Spec().API, clusterAPI, sc)
	if err != nil {
		return 2, err
	}
	if len(targets) == 0 {
		fmt.Fprintf(out, "no Composition or instance uses Bundle %s%s\n", v.name, sc.describe())
		return 0, nil
	}
	caps, err := s.Capabilities(ctx)
	if err != nil {
		return 2, err
	}
	pool, err := sandbox.New(sandbox.Options{Limits: limits, Workers: min(blastParallel, runtime.GOMAXPROCS(0))})
	if err != nil {
		return 2, err
	}
	defer pool.Close()
	targets = wavePlan(ctx, s, v.name, b.Spec(), cluster, targets, f.ControllerNamespace)
	e := &evaluator{s: s, renderer: pool, bundle: b, caps: caps, diffs: bf.output == outputDiff, cluster: cluster,
		holding: revision.HoldingAllowed(&v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Revisions: revisionsOf(b.Spec(), cluster)}}),
		waves:   newWaveHeader(rollout.Policy(&v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Rollout: rolloutOf(b.Spec(), cluster)}}).Strategy, targets)}
	return e.report(ctx, targets, out)
}

// report evaluates every target, blastParallel at a time, prints each
// result in target order as soon as it and those before it are done, then
// the summary. It returns the exit status and the errors that kept a
// parent from being checked.
func (e *evaluator) report(ctx context.Context, targets []target, out io.Writer) (int, error) {
	var results []*blastResult
	var errs []error
	eachInOrder(len(targets), blastParallel, func(i int) *blastResult { return e.evaluate(ctx, targets[i]) }, func(r *blastResult) {
		results = append(results, r)
		e.waves.print(out, r)
		printResult(out, r, e.diffs)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s (%s): %w", r.name(), r.kind, r.err))
		}
	})
	fmt.Fprintln(out, summarize(results))
	return exitStatus(results), errors.Join(errs...)
}

// clusterBundleOf returns the cluster's Bundle name, nil when it does not
// exist (with a note: the new version would be its first).
func clusterBundleOf(ctx context.Context, s *session.Session, name string) (*v1alpha1.Bundle, error) {
	b := &v1alpha1.Bundle{}
	switch err := s.Client.Get(ctx, client.ObjectKey{Name: name}, b); {
	case apierrors.IsNotFound(err):
		fmt.Fprintf(s.Notes, "note: Bundle %s is not in the cluster: this would be its first version\n", name)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read Bundle %s: %w", name, err)
	}
	return b, nil
}

// rolloutOf is the rollout policy of a new version: its own, else the
// cluster Bundle's (a folder may not say it).
func rolloutOf(spec v1alpha1.BundleSpec, cluster *v1alpha1.Bundle) *v1alpha1.RolloutPolicy {
	if spec.Rollout == nil && cluster != nil {
		return cluster.Spec.Rollout
	}
	return spec.Rollout
}

// revisionsOf is the revision policy of a new version: its own, else the
// cluster Bundle's.
func revisionsOf(spec v1alpha1.BundleSpec, cluster *v1alpha1.Bundle) *v1alpha1.RevisionPolicy {
	if spec.Revisions == nil && cluster != nil {
		return cluster.Spec.Revisions
	}
	return spec.Revisions
}

// describe says how the scope narrows, for messages: " in namespace
// team-a with labels team=a".
func (sc scope) describe() string {
	var out string
	if sc.namespace != "" {
		out += " in namespace " + sc.namespace
	}
	if !sc.selector.Empty() {
		out += " with labels " + sc.selector.String()
	}
	return out
}

// eachInOrder runs do(0..n-1) on at most parallel goroutines and hands
// each result to emit in index order, as soon as it and all before it are
// done.
func eachInOrder[T any](n, parallel int, do func(int) T, emit func(T)) {
	results := make([]T, n)
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	next := make(chan int)
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	for range min(parallel, n) {
		go func() {
			for i := range next {
				results[i] = do(i)
				close(done[i])
			}
		}()
	}
	for i := range n {
		<-done[i]
		emit(results[i])
	}
}

// evaluate renders t with the new version, dry-runs the apply of every
// child and lists what would be pruned, as the per-file diff does.
func (e *evaluator) evaluate(ctx context.Context, t target) *blastResult {
	if r := e.settled(ctx, t); r != nil {
		return r
	}
	r := &blastResult{target: t}
	p, rec := e.render(ctx, r)
	if p == nil {
		return r
	}
	previews := applyset.DryRun(ctx, e.s.Client, p.ID, rec, e.s.Consent(t.parent, e.bundle), p.Objects)
	if !e.applies(r, previews) {
		return r
	}
	if err := e.pruned(ctx, r, p); err != nil {
		r.outcome, r.err = unchecked, err
		return r
	}
	outs, err := blastOutputs(ctx, t.parent, e.bundle, previews)
	if err != nil {
		r.outcome, r.err = unchecked, fmt.Errorf("status outputs: %w", err)
		return r
	}
	r.outputs = outs
	if len(r.children) > 0 {
		r.outcome = changes
	}
	return r
}

// settled is the result of a target decided without rendering it with
// the new version: one the new version no longer serves, whose spec is
// refused, that pins a revision, or whose values the new version refuses;
// nil for any other.
func (e *evaluator) settled(ctx context.Context, t target) *blastResult {
	r := &blastResult{target: t}
	switch {
	case t.leftAlone != "":
		r.outcome = leftAlone
		return r
	case t.specErr != nil:
		r.outcome, r.failures = renderFails, []string{t.specErr.Error()}
		return r
	case t.pin != "":
		r.outcome, r.failures = pinned, []string{fmt.Sprintf("pinned to revision %s: not moved", t.pin)}
		return e.stays(ctx, r, t.pin)
	}
	if _, err := templates.MergeValues(e.bundle, t.parent.ParentSpec().Values); err != nil {
		if !e.holding {
			r.outcome, r.failures = renderFails, []string{fmt.Sprintf("the new version refuses its values: %v; it would stall (ValuesRefused: spec.revisions.holding is not Allowed)", err)}
			return r
		}
		r.outcome, r.failures = held, []string{fmt.Sprintf("stays on its revision: the new version refuses its values: %v", err)}
		on := ""
		if h := t.parent.ParentStatus().BundleRevision; h != "" {
			on = revision.Name(e.bundle.Name(), h)
		}
		return e.stays(ctx, r, on)
	}
	return nil
}

// render renders r's parent with the new version as the controller would
// and returns the plan and the record of the parent's ApplySet; a nil
// plan when r is decided (the render fails or is refused, or could not be
// done).
func (e *evaluator) render(ctx context.Context, r *blastResult) (*plan.Plan, *applyset.Record) {
	in := plan.RenderInput(r.parent, plan.Live(r.parent), e.caps)
	// What the controller takes for the set's own members.
	rec, err := e.s.RecordOf(ctx, r.parent)
	if err != nil {
		r.outcome, r.err = unchecked, err
		return nil, nil
	}
	// As the controller would render it: with the generated values it
	// keeps, the lookups answered (as the user) and the members observed.
	var stores *valuestore.Stores
	if e.bundle.MayGenerate() {
		if stores, err = e.s.Kept(ctx, r.parent, rec); err != nil {
			r.outcome, r.err = unchecked, err
			return nil, nil
		}
		in.Generated, in.GeneratedKey = stores.Values(), stores.SetKey()
	}
	p, obs, err := plan.NewObservedPlan(ctx, e.renderer, e.bundle, in, e.s.APIs, e.s.Observe(rec), e.s.Answer)
	if err == nil && stores != nil {
		err = stores.Place(p, obs.Generated)
	}
	var renderErr *templates.RenderError
	var refused *plan.RefusedError
	switch {
	case errors.As(err, &renderErr), errors.As(err, &refused):
		r.outcome, r.failures = renderFails, []string{err.Error()}
		return nil, nil
	case err != nil:
		r.outcome, r.err = unchecked, fmt.Errorf("render: %w", err)
		return nil, nil
	}
	return p, rec
}

// applies adds to r the children the dry runs previews change and the
// ones the API server would refuse. It reports whether the controller
// would go on to prune: false, with r decided, when a child would fail to
// apply or could not be checked.
func (e *evaluator) applies(r *blastResult, previews []applyset.Preview) bool {
	var errs []error
	for _, pv := range previews {
		var foreign *applyset.ForeignMemberError
		var refused *applyset.AdoptionRefusedError
		switch {
		case pv.Err != nil && (apierrors.IsInvalid(pv.Err) || errors.As(pv.Err, &foreign) || errors.As(pv.Err, &refused)):
			// reconcile's "dry-run apply Kind/ns/name: ..." says one
			// word too many after "would fail to apply".
			r.failures = append(r.failures, strings.TrimPrefix(pv.Err.Error(), "dry-run apply "))
		case pv.Err != nil:
			errs = append(errs, pv.Err)
		default:
			c, err := e.child(pv)
			if err != nil {
				errs = append(errs, err)
			} else if c != nil {
				r.children = append(r.children, *c)
			}
		}
	}
	switch {
	case len(errs) > 0:
		r.outcome, r.err = unchecked, errors.Join(errs...)
		return false
	case len(r.failures) > 0:
		r.outcome = applyFails // the controller prunes nothing after a failed apply
		return false
	}
	return true
}

// stays is r, a parent that stays on revision name, failed when the new
// version's policy fails that revision's render (see staysWithin).
func (e *evaluator) stays(ctx context.Context, r *blastResult, name string) *blastResult {
	why, err := e.staysWithin(ctx, r.target, name)
	switch {
	case err != nil:
		r.outcome, r.err = unchecked, err
	case why != "":
		r.outcome, r.failures = renderFails, []string{why}
	}
	return r
}

// child is what the dry run pv says of one child: nil when unchanged.
func (e *evaluator) child(pv applyset.Preview) (*childChange, error) {
	c := &childChange{ref: childRef(pv.Desired), what: "created"}
	if pv.Live != nil {
		c.what, c.fields = "changed", applyset.ChangedFields(pv.Live, pv.Applied)
		if len(c.fields) == 0 {
			return nil, nil
		}
	}
	if e.diffs {
		text, err := preview.UnifiedDiff(pv)
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", c.ref, err)
		}
		c.diff = text
	}
	return c, nil
}

// pruned adds to r the members the controller would prune after applying p.
func (e *evaluator) pruned(ctx context.Context, r *blastResult, p *plan.Plan) error {
	parent := r.parent
	if r.served != nil {
		parent = r.served // the new version of its kind may not be served yet
	}
	pruned, err := prune.Candidates(ctx, e.s.Client, e.s.Mapper, parent, p)
	if err != nil && !meta.IsNoMatchError(err) { // a kind not served yet has no member to prune
		return fmt.Errorf("list members to prune: %w", err)
	}
	for _, c := range pruned {
		what := "would be pruned"
		if c.Orphan {
			what = "would be orphaned (helm.sh/resource-policy: keep): no longer a member, not deleted"
		}
		r.children = append(r.children, childChange{ref: c.Ref, what: what})
	}
	return nil
}

// childRef names an object as PruneCandidate.Ref does: Kind/namespace/name.
func childRef(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return u.GetKind() + "/" + ns + "/" + u.GetName()
	}
	return u.GetKind() + "/" + u.GetName()
}
