package applyset

import (
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Record is the controller's record of which objects are a set's members
// (status.inventory.members): the UIDs of the objects stencil created or
// applied as members, and of the crds/ CRDs it created. It is the only
// proof of membership: the part-of label and the field managers of an
// object are anyone's to write who may patch it, and only help to find
// members. Owns takes an object as Ours only when its UID is recorded.
//
// A pass reads the record from the parent's status (RecordOf), adds what
// it creates or adopts as it goes (Add, AddCRD), drops what a live
// listing no longer finds (Forget), and writes it with the status
// (Status), or, when that write fails, alone over the parent's latest
// status (Merge). It is safe for concurrent use: a stage's applies run
// side by side.
//
// A nil Record records nothing: nothing is Ours.
type Record struct {
	mu   sync.RWMutex
	uids map[types.UID]bool
	crds map[types.UID]bool
	// legacy: the parent has no record yet, as a stencil before the
	// record left it (see RecordOf): Owns falls back to that version's
	// rule until Seed replaces it.
	legacy bool
	// seeded: Seed made the record in this pass (crds/ CRDs are seeded
	// when they are installed, see SeedingCRDs).
	seeded bool
	// What this pass changed, for Merge.
	added, dropped, crdsAdded, crdsDropped map[types.UID]bool
}

// NewRecord is a record of uids and crds.
func NewRecord(uids, crds []types.UID) *Record {
	r := &Record{uids: map[types.UID]bool{}, crds: map[types.UID]bool{}}
	for _, u := range uids {
		r.uids[u] = true
	}
	for _, u := range crds {
		r.crds[u] = true
	}
	return r
}

// RecordOf is the record parent p holds in its status:
//
//   - status.inventory.members: the record, strict;
//   - no members record, but a status an earlier stencil wrote (an
//     inventory, conditions or an observedGeneration: only the controller
//     writes a parent's status): a legacy record, which Owns reads with
//     that version's rule (this set's part-of label and a field of
//     FieldManager) until the pass seeds it (Seed);
//   - no status at all: a parent never reconciled, of which nothing is a
//     member yet.
func RecordOf(p Parent) *Record {
	st := p.ParentStatus()
	if st.Inventory != nil && st.Inventory.Members != nil {
		return NewRecord(st.Inventory.Members.UIDs, st.Inventory.Members.CRDs)
	}
	r := NewRecord(nil, nil)
	r.legacy = st.Inventory != nil || st.ObservedGeneration > 0 || len(st.Conditions) > 0
	return r
}

// Has reports whether uid is recorded a member.
func (r *Record) Has(uid types.UID) bool {
	if r == nil || uid == "" {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.uids[uid]
}

// Legacy reports whether r is the record of a parent an earlier stencil
// reconciled, not seeded yet (see RecordOf).
func (r *Record) Legacy() bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.legacy
}

// owns reports whether live is a member by r: its UID recorded, or, on a
// legacy record, managed by FieldManager (the earlier rule; the caller
// checked the label).
func (r *Record) owns(live metav1.Object) bool {
	if r.Has(live.GetUID()) {
		return true
	}
	return r.Legacy() && slices.ContainsFunc(live.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager })
}

// Add records uid a member: an object stencil just created or applied
// as one.
func (r *Record) Add(uid types.UID) {
	if r == nil || uid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.uids[uid] {
		r.uids[uid] = true
		mark(&r.added, &r.dropped, uid)
	}
}

// Forget drops uids from the record: objects a live listing no longer
// finds among the set's members.
func (r *Record) Forget(uids ...types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range uids {
		if r.uids[uid] {
			delete(r.uids, uid)
			mark(&r.dropped, &r.added, uid)
		}
	}
}

// UIDs returns the recorded members' UIDs, sorted.
func (r *Record) UIDs() []types.UID {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.uids))
}

// HasCRD reports whether uid is a crds/ CRD the set created.
func (r *Record) HasCRD(uid types.UID) bool {
	if r == nil || uid == "" {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.crds[uid]
}

// AddCRD records uid a crds/ CRD of the set: one it just created.
func (r *Record) AddCRD(uid types.UID) {
	if r == nil || uid == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.crds[uid] {
		r.crds[uid] = true
		mark(&r.crdsAdded, &r.crdsDropped, uid)
	}
}

// KeepCRDs drops every recorded crds/ CRD but keep: the live CRDs of the
// chart's crds/ that the set created (a CRD no longer in the chart, or
// made again by someone else, is no longer the set's).
func (r *Record) KeepCRDs(keep []types.UID) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.crds {
		if !slices.Contains(keep, uid) {
			delete(r.crds, uid)
			mark(&r.crdsDropped, &r.crdsAdded, uid)
		}
	}
}

// SeedingCRDs reports whether the record was seeded this pass (see Seed):
// the crds/ CRDs that an earlier stencil's pass installed are then taken
// as the set's by that version's rule, a field of the crds/ field manager.
func (r *Record) SeedingCRDs() bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.seeded
}

// Changed reports whether the pass changed the record.
func (r *Record) Changed() bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.added)+len(r.dropped)+len(r.crdsAdded)+len(r.crdsDropped) > 0
}

// Status is the record as the parent's status.inventory.members holds
// it; nil for a legacy record not seeded (the parent keeps none yet).
func (r *Record) Status() *v1alpha1.MemberRecord {
	if r == nil || r.Legacy() {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &v1alpha1.MemberRecord{}
	if len(r.uids) > 0 {
		out.UIDs = slices.Sorted(maps.Keys(r.uids))
	}
	if len(r.crds) > 0 {
		out.CRDs = slices.Sorted(maps.Keys(r.crds))
	}
	return out
}

// Merge is what the parent's record becomes when this pass's changes are
// made to latest, the record the parent holds now (nil: none, or a
// legacy one): latest with what the pass added and without what it
// dropped. A pass whose full status write failed (a conflict with
// another write) writes this, so that what it created stays recorded.
func (r *Record) Merge(latest *v1alpha1.MemberRecord) *v1alpha1.MemberRecord {
	if latest == nil {
		return r.Status()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	merge := func(base []types.UID, added, dropped map[types.UID]bool) []types.UID {
		set := map[types.UID]bool{}
		for _, u := range base {
			set[u] = true
		}
		maps.Copy(set, added)
		for u := range dropped {
			delete(set, u)
		}
		if len(set) == 0 {
			return nil
		}
		return slices.Sorted(maps.Keys(set))
	}
	return &v1alpha1.MemberRecord{UIDs: merge(latest.UIDs, r.added, r.dropped), CRDs: merge(latest.CRDs, r.crdsAdded, r.crdsDropped)}
}

// Seed makes a legacy record (see RecordOf) the record: the listed
// members labelled part of set id that stencil's field manager manages,
// the rule of the stencil that reconciled the parent before. It is done
// once, on a live listing of the whole recorded inventory; from then on
// the record alone proves membership.
func (r *Record) Seed(listed []Member, id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.legacy {
		return
	}
	for _, m := range listed {
		if m.Meta.Labels[LabelPartOf] == id && slices.ContainsFunc(m.Meta.ManagedFields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager }) {
			r.uids[m.Meta.UID] = true
			mark(&r.added, &r.dropped, m.Meta.UID)
		}
	}
	r.legacy, r.seeded = false, true
}

// mark puts uid in *to and takes it out of *from.
func mark(to, from *map[types.UID]bool, uid types.UID) {
	if *to == nil {
		*to = map[types.UID]bool{}
	}
	(*to)[uid] = true
	delete(*from, uid)
}
