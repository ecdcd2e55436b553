package prune

import (
	"slices"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"k8s.io/apimachinery/pkg/types"
)

// Unseen returns the members record holds that cached, a listing of the
// whole recorded inventory, did not find (or found and the pass deleted),
// and that the pass did not apply (applied): members that may be gone. nil when
// cached could not list every recorded kind: the members of a kind not
// listed may be anywhere, so none is taken for gone.
func Unseen(record *applyset.Record, cached applyset.ListResult, applied, deleted map[types.UID]bool) []types.UID {
	if len(cached.Unlisted) > 0 {
		return nil
	}
	seen := make(map[types.UID]bool, len(cached.Members)+len(applied))
	for _, m := range cached.Members {
		if !deleted[m.Meta.UID] {
			seen[m.Meta.UID] = true
		}
	}
	for uid := range applied {
		seen[uid] = true
	}
	var out []types.UID
	for _, uid := range record.UIDs() {
		if !seen[uid] {
			out = append(out, uid)
		}
	}
	return out
}

// Forget drops from record the members of unseen that live, a live
// listing of the whole recorded inventory (by the part-of label), does
// not find: deleted, or orphaned (their label removed, by stencil or by
// hand). A member whose kind could not be listed stays recorded.
func Forget(record *applyset.Record, unseen []types.UID, live applyset.ListResult) {
	if len(unseen) == 0 || len(live.Unlisted) > 0 {
		return
	}
	found := make(map[types.UID]bool, len(live.Members))
	for _, m := range live.Members {
		found[m.Meta.UID] = true
	}
	unseen = slices.DeleteFunc(unseen, func(uid types.UID) bool { return found[uid] })
	record.Forget(unseen...)
}
