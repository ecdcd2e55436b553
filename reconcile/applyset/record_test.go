package applyset_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// TestRecordOf: a parent's record is what its status holds; a parent an
// earlier stencil reconciled (a status, no members record) has a legacy
// one until seeded; a parent never reconciled has an empty one.
func TestRecordOf(t *testing.T) {
	comp := func(st v1alpha1.CompositionStatus) *v1alpha1.Composition { return &v1alpha1.Composition{Status: st} }
	tests := []struct {
		name   string
		status v1alpha1.CompositionStatus
		legacy bool
		uids   []types.UID
	}{
		{"never reconciled", v1alpha1.CompositionStatus{}, false, nil},
		{"recorded", v1alpha1.CompositionStatus{Inventory: &v1alpha1.InventoryStatus{Members: &v1alpha1.MemberRecord{UIDs: []types.UID{"b", "a"}}}}, false, []types.UID{"a", "b"}},
		{"recorded, no member", v1alpha1.CompositionStatus{Inventory: &v1alpha1.InventoryStatus{Members: &v1alpha1.MemberRecord{}}}, false, nil},
		{"an inventory before the record", v1alpha1.CompositionStatus{Inventory: &v1alpha1.InventoryStatus{GroupKinds: []string{"ConfigMap"}}}, true, nil},
		{"a status before the inventory", v1alpha1.CompositionStatus{ObservedGeneration: 3}, true, nil},
	}
	for _, tt := range tests {
		rec := applyset.RecordOf(comp(tt.status))
		if rec.Legacy() != tt.legacy || !slices.Equal(rec.UIDs(), tt.uids) {
			t.Errorf("%s: legacy %v, uids %v; want %v, %v", tt.name, rec.Legacy(), rec.UIDs(), tt.legacy, tt.uids)
		}
		if got := rec.Status(); (got == nil) != tt.legacy {
			t.Errorf("%s: Status() = %+v; a legacy record writes none, any other one", tt.name, got)
		}
	}
}

// TestRecordSeed: a legacy record is seeded from the listed members of
// the set that stencil's field manager manages (the earlier rule), once.
func TestRecordSeed(t *testing.T) {
	const id = "applyset-x-v1"
	member := func(uid types.UID, set, manager string) applyset.Member {
		m := applyset.Member{}
		m.Meta.UID = uid
		m.Meta.Labels = map[string]string{applyset.LabelPartOf: set}
		m.Meta.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: manager}}
		return m
	}
	rec := applyset.RecordOf(&v1alpha1.Composition{Status: v1alpha1.CompositionStatus{ObservedGeneration: 1}})
	rec.Seed([]applyset.Member{member("ours", id, applyset.FieldManager), member("copied", id, "kubectl"), member("theirs", "applyset-y-v1", applyset.FieldManager)}, id)
	if rec.Legacy() || !rec.SeedingCRDs() || !slices.Equal(rec.UIDs(), []types.UID{"ours"}) || !rec.Changed() {
		t.Errorf("seeded: legacy %v, seeding %v, uids %v, changed %v; want ours alone", rec.Legacy(), rec.SeedingCRDs(), rec.UIDs(), rec.Changed())
	}
	rec.Seed([]applyset.Member{member("later", id, applyset.FieldManager)}, id)
	if slices.Contains(rec.UIDs(), "later") {
		t.Errorf("a seeded record was seeded again: %v", rec.UIDs())
	}
}

// TestRecordMerge: what a pass changed, made to the record the parent
// holds now (another write's), keeps both: the pass's additions, the
// other's additions, without what the pass forgot.
func TestRecordMerge(t *testing.T) {
	rec := applyset.NewRecord([]types.UID{"a", "b"}, []types.UID{"crd-1"})
	if rec.Changed() {
		t.Error("a record read is changed")
	}
	rec.Add("c")
	rec.Add("a") // already recorded: no change
	rec.Forget("b")
	rec.AddCRD("crd-2")
	rec.KeepCRDs([]types.UID{"crd-2"})
	latest := &v1alpha1.MemberRecord{UIDs: []types.UID{"a", "b", "x"}, CRDs: []types.UID{"crd-1", "crd-9"}}
	want := &v1alpha1.MemberRecord{UIDs: []types.UID{"a", "c", "x"}, CRDs: []types.UID{"crd-2", "crd-9"}}
	if diff := cmp.Diff(want, rec.Merge(latest)); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&v1alpha1.MemberRecord{UIDs: []types.UID{"a", "c"}, CRDs: []types.UID{"crd-2"}}, rec.Merge(nil)); diff != "" {
		t.Errorf("Merge over no record (-want +got):\n%s", diff)
	}
	var none *applyset.Record
	if none.Has("a") || none.Changed() || none.Status() != nil {
		t.Error("a nil record records something")
	}
}
