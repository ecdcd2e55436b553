package revision

import (
	"cmp"
	"slices"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// DefaultHistoryLimit is how many revisions a Bundle keeps when its
// spec.revisions.historyLimit is unset, besides those in use.
const DefaultHistoryLimit = 10

// HistoryLimit is b's spec.revisions.historyLimit or its default.
func HistoryLimit(b *v1alpha1.Bundle) int {
	if r := b.Spec.Revisions; r != nil && r.HistoryLimit != nil && *r.HistoryLimit > 0 {
		return int(*r.HistoryLimit)
	}
	return DefaultHistoryLimit
}

// Withdrawn reports whether b's spec.revisions withdraws the revision name.
func Withdrawn(b *v1alpha1.Bundle, name string) bool {
	return b.Spec.Revisions != nil && slices.Contains(b.Spec.Revisions.Withdrawn, name)
}

// PinningAllowed reports whether b lets parents pin its revisions.
func PinningAllowed(b *v1alpha1.Bundle) bool {
	return b.Spec.Revisions == nil || b.Spec.Revisions.Pinning != v1alpha1.PinningDisallowed
}

// HoldingAllowed reports whether b lets a parent whose values the revision
// it is assigned refuses stay on the one it is on (spec.revisions.holding:
// Allowed); by default such a parent stalls.
func HoldingAllowed(b *v1alpha1.Bundle) bool {
	return b.Spec.Revisions != nil && b.Spec.Revisions.Holding == v1alpha1.HoldingAllowed
}

// Prune returns the revisions of b, among revs, to delete: past the
// newest limit ones (by number), or withdrawn, and used by nobody: no
// shard counts a parent on it or pinned to it (Used), and needed is
// false for it (a rollout's stable or target revision, the Bundle's
// current one).
func Prune(b *v1alpha1.Bundle, revs []v1alpha1.BundleRevision, needed func(name string) bool) []v1alpha1.BundleRevision {
	revs = slices.Clone(revs)
	slices.SortFunc(revs, func(x, y v1alpha1.BundleRevision) int {
		return cmp.Or(cmp.Compare(y.Spec.Number, x.Spec.Number), cmp.Compare(x.Name, y.Name))
	})
	limit := HistoryLimit(b)
	var out []v1alpha1.BundleRevision
	for i, r := range revs {
		if (i < limit && !Withdrawn(b, r.Name)) || Used(&r) || needed(r.Name) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Used reports whether any shard counts a parent on rev or pinned to it.
func Used(rev *v1alpha1.BundleRevision) bool {
	if rev.Status.Parents > 0 || rev.Status.Pinned > 0 {
		return true
	}
	for _, s := range rev.Status.Shards {
		if s.Parents > 0 || s.Pinned > 0 {
			return true
		}
	}
	return false
}

// NextNumber is the number of a new revision among revs: one more than
// the highest.
func NextNumber(revs []v1alpha1.BundleRevision) int64 {
	var n int64
	for _, r := range revs {
		n = max(n, r.Spec.Number)
	}
	return n + 1
}
