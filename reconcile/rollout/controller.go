package rollout

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/templates"
)

// +kubebuilder:rbac:groups=stencil.dev,resources=bundlerevisions,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=stencil.dev,resources=bundlerevisions/status,verbs=get;update;patch

// Lister lists a shard's parents of a Bundle: its Compositions and the
// instances of the kind it publishes, from the controller's caches.
type Lister interface {
	ListParents(ctx context.Context, bundle string) ([]applyset.Parent, error)
}

// Loader loads a revision of a Bundle (its current content included),
// parsed once per revision.
type Loader interface {
	LoadRevision(ctx context.Context, b *v1alpha1.Bundle, name string) (*templates.Bundle, error)
}

// Reconciler runs the rollouts of one shard's parents of every Bundle: it
// records each new content of a Bundle as a BundleRevision, moves the
// parents' assignment through the rollout's waves (the Bundle's
// status.rollouts entry of its shard, which every parent's pass reads),
// counts the parents on each revision (the revision's status) and deletes
// the revisions nobody needs. It writes only the Bundle's status (with an
// optimistic lock: the Bundle controller writes it too), BundleRevisions
// and their status, and events on the Bundle: as the controller, never as
// a parent's ServiceAccount.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Shard    string
	Parents  Lister
	Loader   Loader
	// Order keeps the key parents are ranked by (nil: the zero Order's,
	// for tests).
	Order *OrderKey
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex
	// compat remembers whether a revision takes a parent's values, by
	// parent UID, generation and revision.
	compat map[compatKey]compatAnswer
	// tooLarge remembers the revisions the API server refused as too
	// large, warned of once.
	tooLarge map[string]bool
	// counted is when each Bundle's counts were last written (see
	// CountInterval).
	counted map[string]time.Time
}

// CountInterval is how often, at most, a Bundle's rollout is written when
// only its counts changed (parents updated and Ready, the summary), and
// its revisions' counts: a wave of a thousand parents turning Ready one
// by one costs a write every few seconds, not one per Coalesce. A wave's
// start, end, halt or rollback is written at once.
const CountInterval = 5 * time.Second

type compatKey struct {
	uid        types.UID
	generation int64
	revision   string
}

type compatAnswer struct {
	ok  bool
	why string
}

// Reconcile runs one Step of the Bundle's rollout for the shard and
// writes what it decided.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil || !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	revs, err := r.revisions(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if revs, err = r.record(ctx, b, revs); err != nil {
		return ctrl.Result{}, err
	}
	listed, err := r.Parents.ListParents(ctx, b.Name)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("list the parents of Bundle %s: %w", b.Name, err)
	}
	parents := make([]*Parent, 0, len(listed))
	for _, p := range listed {
		parents = append(parents, r.view(ctx, p))
	}
	if Find(b, r.Shard) == nil && len(parents) == 0 {
		// A shard with no parent of b keeps no rollout of it: its first
		// parent renders b's current content, and the next look starts
		// the record from there.
		return ctrl.Result{}, r.prune(ctx, b, revs)
	}
	var order Order
	if r.Order != nil && (Policy(b).Strategy == v1alpha1.RolloutWaves || Ranked(b, r.Shard)) {
		if order, err = r.Order.Order(ctx); err != nil {
			return ctrl.Result{}, err
		}
	}
	gates, gateErr := CompileGates(Policy(b).Gates)
	out := Step{Bundle: b, Shard: r.Shard, Parents: parents, Order: order, Gates: gates, GateErr: gateErr, Now: r.now(),
		Accepts: func(p *Parent, rev string) (bool, string) { return r.accepts(ctx, b, p, rev) }}.Run(ctx)
	due, wait := r.countsDue(b.Name)
	old := Find(b, r.Shard)
	if due || old == nil || !sameButCounts(*old, out.Status) {
		if err := r.writeStatus(ctx, b, out.Status); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, e := range out.Events {
		r.Recorder.Eventf(b, nil, e.Type, e.Reason, "Rollout", "%s", e.Note)
	}
	if due {
		if err := r.count(ctx, b.Name, revs, parents); err != nil {
			return ctrl.Result{}, err
		}
		r.mu.Lock()
		r.counted[b.Name] = r.now()
		r.mu.Unlock()
	}
	if err := r.prune(ctx, b, revs); err != nil {
		return ctrl.Result{}, err
	}
	requeue := out.Requeue
	if !due && (requeue == 0 || wait < requeue) {
		requeue = wait // the counts not written yet
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// countsDue reports whether b's counts may be written now, and else how
// long until they may (see CountInterval).
func (r *Reconciler) countsDue(bundle string) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counted == nil {
		r.counted = map[string]time.Time{}
	}
	last, ok := r.counted[bundle]
	if !ok {
		return true, 0
	}
	left := last.Add(CountInterval).Sub(r.now())
	return left <= 0, left
}

// sameButCounts reports whether two rollouts differ at most in what
// counting changes: the counts, the summary and the message.
func sameButCounts(a, b v1alpha1.RolloutStatus) bool {
	for _, st := range []*v1alpha1.RolloutStatus{&a, &b} {
		st.Parents, st.Updated, st.Ready, st.Summary, st.Message = 0, 0, 0, "", ""
	}
	return equality.Semantic.DeepEqual(a, b)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// revisions lists b's revisions from the cache.
func (r *Reconciler) revisions(ctx context.Context, b *v1alpha1.Bundle) ([]v1alpha1.BundleRevision, error) {
	list := &v1alpha1.BundleRevisionList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels(revision.Selector(b.Name))); err != nil {
		return nil, fmt.Errorf("list the revisions of Bundle %s: %w", b.Name, err)
	}
	out := list.Items[:0]
	for i := range list.Items {
		if revision.Of(&list.Items[i], b) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// record makes the BundleRevision of b's current content when there is
// none: only once the content loads and hashes to the revision b's status
// records (a status that lags the spec waits for the Bundle controller).
// A revision the API server refuses as too large is warned of once; its
// parents render the Bundle itself while it is current.
func (r *Reconciler) record(ctx context.Context, b *v1alpha1.Bundle, revs []v1alpha1.BundleRevision) ([]v1alpha1.BundleRevision, error) {
	current := Current(b)
	if current == "" || slices.ContainsFunc(revs, func(x v1alpha1.BundleRevision) bool { return x.Name == current }) {
		return revs, nil
	}
	loaded, err := r.Loader.LoadRevision(ctx, b, current)
	if err != nil || loaded.Revision() != b.Status.Revision {
		return revs, nil //nolint:nilerr // content that does not load (or lags its status) is not recorded yet: the Bundle controller's next status brings the next pass
	}
	rev := revision.New(b, b.Status.Revision, revision.NextNumber(revs))
	switch err := r.Client.Create(ctx, rev); {
	case apierrors.IsAlreadyExists(err):
		return revs, nil // another shard's controller made it
	case apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err):
		r.mu.Lock()
		warned := r.tooLarge[current]
		if r.tooLarge == nil {
			r.tooLarge = map[string]bool{}
		}
		r.tooLarge[current] = true
		r.mu.Unlock()
		if !warned {
			r.Recorder.Eventf(b, nil, "Warning", v1alpha1.ReasonRevisionRecorded, "Rollout",
				"revision %s could not be recorded (%s): parents render the Bundle itself while it is current, and cannot go back to it later", current, apierrors.ReasonForError(err))
		}
		return revs, nil
	case err != nil:
		return revs, fmt.Errorf("record revision %s of Bundle %s: %w", current, b.Name, err)
	}
	// Its counts written as zeros, so that kubectl get bundlerevisions
	// shows 0 and not an empty column until a parent is on it (a create
	// drops the status); against the resourceVersion created, so that it
	// never overwrites another shard's count. Best effort: count writes
	// them on the next change.
	zeros := fmt.Sprintf(`{"metadata":{"resourceVersion":%q},"status":{"parents":0,"ready":0,"pinned":0}}`, rev.ResourceVersion)
	if err := r.Client.Status().Patch(ctx, rev, client.RawPatch(types.MergePatchType, []byte(zeros))); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("the zero counts of a new revision were not written", "revision", rev.Name, "error", err.Error())
	}
	r.Recorder.Eventf(b, nil, "Normal", v1alpha1.ReasonRevisionRecorded, "Rollout", "revision %s (number %d) recorded", rev.Name, rev.Spec.Number)
	return append(revs, *rev), nil
}

// view is what a rollout reads of parent p, its namespace's labels
// included (from the cache; none when it cannot be read).
func (r *Reconciler) view(ctx context.Context, p applyset.Parent) *Parent {
	v := FromParent(p)
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: p.GetNamespace()}, ns); err == nil {
		v.NamespaceLabels = ns.GetLabels()
	}
	return v
}

// FromParent is what a rollout reads of p, but its namespace's labels.
func FromParent(p applyset.Parent) *Parent {
	spec, st := p.ParentSpec(), p.ParentStatus()
	return &Parent{
		Key:        Key{Kind: p.ParentGVK().GroupKind().String(), Namespace: p.GetNamespace(), Name: p.GetName()},
		UID:        p.GetUID(),
		Labels:     p.GetLabels(),
		Pin:        spec.BundleRevision,
		Suspended:  spec.Suspend,
		Deleting:   !p.GetDeletionTimestamp().IsZero(),
		Values:     spec.Values,
		Generation: p.GetGeneration(),
		Status:     *st,
	}
}

// accepts reports whether revision rev of b takes p's values, once per
// parent generation and revision. A revision that cannot be loaded takes
// them: its parents' passes report what fails.
func (r *Reconciler) accepts(ctx context.Context, b *v1alpha1.Bundle, p *Parent, rev string) (bool, string) {
	key := compatKey{uid: p.UID, generation: p.Generation, revision: rev}
	r.mu.Lock()
	a, ok := r.compat[key]
	r.mu.Unlock()
	if ok {
		return a.ok, a.why
	}
	loaded, err := r.Loader.LoadRevision(ctx, b, rev)
	if err != nil {
		return true, ""
	}
	a = compatAnswer{ok: true}
	if _, err := templates.MergeValues(loaded, p.Values); err != nil {
		a = compatAnswer{why: err.Error()}
	}
	r.mu.Lock()
	if r.compat == nil || len(r.compat) > maxCompat {
		r.compat = map[compatKey]compatAnswer{}
	}
	r.compat[key] = a
	r.mu.Unlock()
	return a.ok, a.why
}

// maxCompat bounds the answers remembered: past it they are forgotten
// together (a rollout asks about at most two revisions per parent).
const maxCompat = 100000

// writeStatus writes st as the shard's rollout in b's status, when it
// changed, over the Bundle as read (a conflict: the next pass).
func (r *Reconciler) writeStatus(ctx context.Context, b *v1alpha1.Bundle, st v1alpha1.RolloutStatus) error {
	if old := Find(b, r.Shard); old != nil && equality.Semantic.DeepEqual(*old, st) {
		return nil
	}
	orig := b.DeepCopy()
	rollouts := slices.DeleteFunc(slices.Clone(b.Status.Rollouts), func(x v1alpha1.RolloutStatus) bool { return x.Shard == r.Shard })
	rollouts = append(rollouts, st)
	slices.SortFunc(rollouts, func(a, b v1alpha1.RolloutStatus) int { return cmp.Compare(a.Shard, b.Shard) })
	b.Status.Rollouts = rollouts
	if err := r.Client.Status().Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the rollout of Bundle %s: %w", b.Name, err)
	}
	return nil
}
