package recall

import (
	"crypto/sha256"
	"encoding/json"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/outputs"
)

// Pass is what the controller keeps, per parent, of its last successful
// pass: what it saw:
// the inputs of its render (the render key: the Composition's UID, generation,
// the labels and annotations templates read, and the Bundle's revision),
// the planned members, and every live member of the set as the cache held
// it before that pass applied anything. When a later pass finds all of it
// unchanged, a render and a comparison would find nothing to do: the pass
// only recomputes the status from the members (reconcile's skipUnchanged). That is
// what keeps a member's status change (a Deployment rolling out, a Pod
// becoming ready) cheap.
//
// A member is unchanged when its resourceVersion is the one recorded, or
// when everything but its status is (see Fingerprint): a status write
// changes the resourceVersion and nothing stencil applies. Any other
// change of a member (drift), a member gone, or a new object carrying the
// set's label brings the full pass. The memo is dropped when a pass does
// not succeed, when the Composition is deleted and when its UID changes
// (the UID is part of the key).
//
// What is recorded is the state the apply compared and found up to date:
// it is read before the apply, and kept only when the pass wrote no
// member and no member's resourceVersion moved until the pass ended (reconcile's
// keepSnapshot). A state read before a write is the drifted one, and a
// member returning to it must bring a full pass, not be taken for the
// converged state.
type Pass struct {
	Key       string                    // the render key of the render
	Revision  string                    // the Bundle's revision
	Inventory string                    // the recorded applyset.Inventory the render saw
	Planned   []MemberKey               // the plan's objects, hooks included, in apply order
	Ordinary  []MemberKey               // those that are not hooks: the members status lists
	Live      map[MemberKey]MemberState // every live member of the set, as listed
	IDs       []string                  // the ordinary members' ids (outputs.ID), in the order of Ordinary
	Outputs   *outputs.Set              // the Bundle's outputs and readiness rules
	// Observed is what the render read of the members' observed values
	// and held back: a later pass whose members hold other values at
	// those paths (a status field included) is a full one.
	Observed *Observed
	// ValuesMigrations are the values migrations the render applied
	// (the parent's status.valuesMigrations).
	ValuesMigrations []string
	// Notes are the render's notes as the status records them (the
	// parent's status.notes).
	Notes string
}

// MemberKey names a member.
type MemberKey struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// MemberState is a live member as one pass saw it.
type MemberState struct {
	ResourceVersion string
	Fingerprint     [sha256.Size]byte
}

// Unchanged reports whether the live members are those the pass saw:
// the same objects, each at the same resourceVersion or differing only in
// its status.
func (p *Pass) Unchanged(live map[MemberKey]*unstructured.Unstructured) bool {
	if len(live) != len(p.Live) {
		return false
	}
	for k, u := range live {
		seen, ok := p.Live[k]
		if !ok {
			return false
		}
		if u.GetResourceVersion() == seen.ResourceVersion {
			continue
		}
		if Fingerprint(u) != seen.Fingerprint {
			return false
		}
		// Only the status changed: remember the new version, so the
		// next event of the same member compares versions alone.
		p.Live[k] = MemberState{ResourceVersion: u.GetResourceVersion(), Fingerprint: seen.Fingerprint}
	}
	return true
}

// Fingerprint hashes a member as stencil's decisions see it: everything
// but its status, its resourceVersion, and the managedFields entries of
// subresources (a status write) and their timestamps. Two objects with the
// same fingerprint would be applied and pruned the same way.
func Fingerprint(u *unstructured.Unstructured) [sha256.Size]byte {
	obj := maps.Clone(u.Object)
	delete(obj, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "resourceVersion")
		if entries, ok := md["managedFields"].([]any); ok {
			kept := make([]any, 0, len(entries))
			for _, e := range entries {
				f, ok := e.(map[string]any)
				if !ok {
					continue
				}
				if sub, _ := f["subresource"].(string); sub != "" {
					continue
				}
				f = maps.Clone(f)
				delete(f, "time")
				kept = append(kept, f)
			}
			md["managedFields"] = kept
		}
		obj["metadata"] = md
	}
	data, err := json.Marshal(obj)
	if err != nil {
		// Unstructured content always marshals; if it did not, no two
		// fingerprints would match and every pass would be a full one.
		data = []byte(u.GetResourceVersion())
	}
	return sha256.Sum256(data)
}
