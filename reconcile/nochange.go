package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxConfirmed bounds the verdicts a confirmer keeps; past it, they are
// all dropped and learnt again.
const maxConfirmed = 20000

// confirmer settles the decisions the local apply leaves to the server
// (decision.confirm) with a server-side dry-run apply, and remembers each
// "no change" verdict by object UID with hashes of the desired object and
// of the live object (its status, resourceVersion and managedFields
// timestamps aside, which an apply to the main resource never changes):
// while neither changes, the verdict holds and no request is sent again.
// A dry-run is a check, not a write: the object is then reported
// Unchanged, and the dry-run counted in stencil_apply_dry_runs_total.
type confirmer struct {
	mu      sync.Mutex
	verdict map[types.UID][2][sha256.Size]byte
}

// unchanged reports whether the API server would store live unchanged
// after the apply of desired by writer. Any error answers false.
func (c *confirmer) unchanged(ctx context.Context, writer client.Client, desired, live *unstructured.Unstructured) bool {
	key, ok := verdictKey(desired, live)
	if !ok {
		return false
	}
	c.mu.Lock()
	v, hit := c.verdict[live.GetUID()]
	c.mu.Unlock()
	if hit && v == key {
		return true
	}
	dry := applyBody(desired)
	dryRunsTotal.Inc()
	if err := writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return false
	}
	if !sameStored(live, dry) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdict == nil || len(c.verdict) >= maxConfirmed {
		c.verdict = map[types.UID][2][sha256.Size]byte{}
	}
	c.verdict[live.GetUID()] = key
	return true
}

// verdictKey hashes desired and live, live without what an apply to the
// main resource never changes.
func verdictKey(desired, live *unstructured.Unstructured) ([2][sha256.Size]byte, bool) {
	l := live.DeepCopy()
	delete(l.Object, "status")
	l.SetResourceVersion("")
	mf := l.GetManagedFields()
	for i := range mf {
		mf[i].Time = nil
	}
	l.SetManagedFields(mf)
	d, err1 := json.Marshal(desired.Object)
	b, err2 := json.Marshal(l.Object)
	if err1 != nil || err2 != nil {
		return [2][sha256.Size]byte{}, false
	}
	return [2][sha256.Size]byte{sha256.Sum256(d), sha256.Sum256(b)}, true
}

// sameStored reports whether two forms of one object the API server
// returned are the same, resourceVersion and managedFields timestamps
// aside.
func sameStored(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		c.SetResourceVersion("")
		mf := c.GetManagedFields()
		for i := range mf {
			mf[i].Time = nil
		}
		c.SetManagedFields(mf)
		return c.Object
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
