package nochange

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Author is a field manager whose changes to a member the apply undoes:
// drift, and who made it.
type Author struct {
	// Manager is the field manager's name (kubectl-edit, kubectl-client-side-apply,
	// a controller's), as the member's managedFields record it.
	Manager string
	// Operation is Update or Apply.
	Operation string
	// Paths names the fields, as paths (never values), at most MaxChanged.
	Paths []string
}

// authorsOf names the managers of live whose fields the apply changes
// back: the modified fields that another manager than fieldManager owns
// in live and fieldManager does not. A field another writer changed
// with an update, or a forced apply, moved to it from stencil's set: its
// changed value is the writer's. A field stencil still owns changed
// because the render did (a new revision, new values): not drift.
// A field someone removed is not in any set any more: it is restored
// with no author named.
func authorsOf(live *unstructured.Unstructured, modified *fieldpath.Set, fieldManager string) []Author {
	if modified == nil || modified.Empty() {
		return nil
	}
	leaves := modified.Leaves()
	ours := &fieldpath.Set{}
	var out []Author
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			continue
		}
		if e.Manager == fieldManager {
			ours = ours.Union(set)
			continue
		}
		if hit := set.Intersection(leaves); !hit.Empty() {
			out = append(out, Author{Manager: e.Manager, Operation: string(e.Operation), Paths: pathsOf(hit)})
		}
	}
	for i := range out {
		out[i].Paths = slices.DeleteFunc(out[i].Paths, func(p string) bool { return containsPath(ours, leaves, p) })
	}
	out = slices.DeleteFunc(out, func(a Author) bool { return len(a.Paths) == 0 })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Manager < out[j].Manager })
	return out
}

// pathsOf formats at most MaxChanged paths of set, sorted.
func pathsOf(set *fieldpath.Set) []string {
	var out []string
	set.Iterate(func(p fieldpath.Path) { out = append(out, formatPath(p)) })
	sort.Strings(out)
	out = compactStrings(out)
	if len(out) > MaxChanged {
		out = out[:MaxChanged]
	}
	return out
}

// containsPath reports whether ours holds the leaf of leaves formatted as p.
func containsPath(ours, leaves *fieldpath.Set, p string) bool {
	found := false
	leaves.Iterate(func(l fieldpath.Path) {
		if !found && formatPath(l) == p && ours.Has(l) {
			found = true
		}
	})
	return found
}
