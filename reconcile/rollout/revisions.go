package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// count writes, on each revision, this shard's count of the parents on it
// (their last render), Ready there, and pinned to it, and the totals over
// every shard's count. A write goes only where a count changed, over the
// revision as read (another shard's controller writes its own count).
func (r *Reconciler) count(ctx context.Context, bundle string, revs []v1alpha1.BundleRevision, parents []*Parent) error {
	counts := map[string]v1alpha1.RevisionShardStatus{}
	for _, p := range parents {
		if on := p.On(bundle); on != "" {
			c := counts[on]
			c.Parents++
			if p.Ready() {
				c.Ready++
			}
			counts[on] = c
		}
		if p.Pin != "" {
			c := counts[p.Pin]
			c.Pinned++
			counts[p.Pin] = c
		}
	}
	var errs []error
	for i := range revs {
		rev := &revs[i]
		c := counts[rev.Name]
		c.Shard = r.Shard
		st := withShard(rev.Status, c)
		if equality.Semantic.DeepEqual(st, rev.Status) {
			continue
		}
		orig := rev.DeepCopy()
		rev.Status = st
		if err := r.Client.Status().Patch(ctx, rev, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("count the parents of revision %s: %w", rev.Name, err))
		}
	}
	return errors.Join(errs...)
}

// withShard is st with the shard's count c (dropped when all zero) and the
// totals summed again.
func withShard(st v1alpha1.BundleRevisionStatus, c v1alpha1.RevisionShardStatus) v1alpha1.BundleRevisionStatus {
	out := v1alpha1.BundleRevisionStatus{}
	for _, s := range st.Shards {
		if s.Shard != c.Shard {
			out.Shards = append(out.Shards, s)
		}
	}
	if c.Parents > 0 || c.Pinned > 0 {
		out.Shards = append(out.Shards, c)
	}
	slices.SortFunc(out.Shards, func(a, b v1alpha1.RevisionShardStatus) int { return cmp.Compare(a.Shard, b.Shard) })
	for _, s := range out.Shards {
		out.Parents += s.Parents
		out.Ready += s.Ready
		out.Pinned += s.Pinned
	}
	return out
}

// prune deletes the revisions of b nobody needs (see revision.Prune): a
// revision is needed while it is b's current one, or any shard's rollout
// has it as its stable revision or target.
func (r *Reconciler) prune(ctx context.Context, b *v1alpha1.Bundle, revs []v1alpha1.BundleRevision) error {
	needed := map[string]bool{Current(b): true}
	for _, st := range b.Status.Rollouts {
		needed[st.Stable], needed[st.Target] = true, true
	}
	var errs []error
	for _, rev := range revision.Prune(b, revs, func(name string) bool { return needed[name] }) {
		uid := rev.UID
		if err := r.Client.Delete(ctx, &rev, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete revision %s: %w", rev.Name, err))
		}
	}
	return errors.Join(errs...)
}
