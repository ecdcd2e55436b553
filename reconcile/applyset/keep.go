package applyset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SeedRecord seeds rec, the legacy record of parent p (see RecordOf),
// from a live listing (through lister, as the controller) of inv, the
// inventory p records: its members labelled part of the set that
// stencil's field manager manages, the rule of the stencil before the
// record (see Record.Seed). A record that is not legacy is left as it is.
// A kind the controller may not list is skipped (its members are left in
// place by prune and deletion alike, and stay unrecorded); any other
// kind that cannot be listed is an error, retried, so that no member is
// lost from the record for a transient failure.
func SeedRecord(ctx context.Context, lister client.Reader, mapper meta.RESTMapper, p Parent, inv Inventory, rec *Record) error {
	if !rec.Legacy() {
		return nil
	}
	pr := &Pruner{Lister: lister, Mapper: mapper, ID: ParentID(p)}
	listed := pr.List(ctx, inv, p.GetNamespace())
	failed := slices.DeleteFunc(slices.Clone(listed.Unlisted), func(gk schema.GroupKind) bool {
		return slices.ContainsFunc(listed.Forbidden, func(f KindIn) bool { return f.GK == gk })
	})
	if len(failed) > 0 {
		return fmt.Errorf("record the members of %s (recorded by an earlier stencil): cannot list %v", Describe(p), failed)
	}
	rec.Seed(listed.Members, pr.ID)
	return nil
}

// KeepRecord writes the record alone: what this pass changed in rec,
// made to the record parent p holds now (read live through reader, see
// Record.Merge), with inv (the inventory the pass wrote to the parent's
// annotations) joined to the status's, in a patch of status.inventory
// over the resourceVersion read, again on a conflict. A pass whose full
// status write failed calls it, so that the members it created stay
// recorded: without it, the next pass would take them for objects it
// never made (AdoptionRefused). It writes as c, the controller: only the
// controller writes a parent's status. It returns the resourceVersion of
// the parent it wrote ("" when it wrote nothing): a cache at an older one
// lacks the record.
func KeepRecord(ctx context.Context, c client.Client, reader client.Reader, p Parent, inv Inventory, rec *Record) (string, error) {
	if !rec.Changed() {
		return "", nil
	}
	var version string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := Reread(ctx, reader, p)
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		merged := inv
		st := live.ParentStatus()
		latest := rec.Status()
		if st.Inventory != nil {
			recorded := Inventory{Namespaces: slices.Clone(st.Inventory.Namespaces)}
			for _, s := range st.Inventory.GroupKinds {
				recorded.GroupKinds = append(recorded.GroupKinds, schema.ParseGroupKind(s))
			}
			merged = merged.Union(recorded)
			latest = rec.Merge(st.Inventory.Members)
		}
		if latest == nil {
			return nil
		}
		out := merged.Normalize(p.GetNamespace()).Status()
		// A merge patch keeps what it does not name: an emptied list is
		// sent as null.
		members := map[string]any{"uids": nil, "crds": nil}
		if len(latest.UIDs) > 0 {
			members["uids"] = latest.UIDs
		}
		if len(latest.CRDs) > 0 {
			members["crds"] = latest.CRDs
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": live.GetResourceVersion()},
			"status": map[string]any{"inventory": map[string]any{
				"groupKinds": out.GroupKinds, "namespaces": out.Namespaces, "members": members,
			}},
		})
		if err != nil {
			return err
		}
		written := live.DeepCopyObject().(client.Object)
		if err := c.Status().Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return client.IgnoreNotFound(err)
		}
		version = written.GetResourceVersion()
		return nil
	})
	return version, err
}
