package nochange

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/stencil-dev/stencil/reconcile/metrics"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// maxConfirmed bounds the verdicts a confirmer keeps; past it, they are
// all dropped and learnt again.
const maxConfirmed = 20000

// confirmer settles the decisions the local apply leaves to the server
// (decision.confirm) with a server-side dry-run apply, and remembers each
// "no change" verdict by object UID with its verdictKey: the hashes of
// the desired object and of the live values at the fields that differ.
// The local apply decides the rest of the object every time, so while
// neither hash changes the verdict holds (a label another manager adds,
// a status update, do not ask again).
// A dry-run is a check, not a write: the object is then reported
// Unchanged, and the dry-run counted in stencil_apply_dry_runs_total.
type confirmer struct {
	mu      sync.Mutex
	verdict map[types.UID]verdictKey
}

// verdictKey identifies one question to the server: hashes of the
// desired object and of the live values at the fields that differ.
type verdictKey [2][sha256.Size]byte

// keyOf makes the verdictKey of desired over live, where cmp found the
// differences; false when it cannot.
func keyOf(desired *unstructured.Unstructured, live *smdtyped.TypedValue, cmp *smdtyped.Comparison) (verdictKey, bool) {
	d, err := json.Marshal(desired.Object)
	if err != nil {
		return verdictKey{}, false
	}
	diff := cmp.Modified.Union(cmp.Added).Union(cmp.Removed)
	l, err := value.ToJSON(live.ExtractItems(diff).AsValue())
	if err != nil {
		return verdictKey{}, false
	}
	return verdictKey{sha256.Sum256(d), sha256.Sum256(l)}, true
}

// unchanged reports whether the API server would store live unchanged
// after the apply of desired by writer as fieldManager (d.confirm set).
// Any error answers false.
func (c *confirmer) unchanged(ctx context.Context, writer client.Client, fieldManager string, desired, live *unstructured.Unstructured, key verdictKey) bool {
	c.mu.Lock()
	v, hit := c.verdict[live.GetUID()]
	c.mu.Unlock()
	if hit && v == key {
		return true
	}
	// The dry run is of exactly the object judged, as the write would be:
	// one that changed since (a stale cache) is refused, and so written.
	dry := applyBody(desired)
	dry.SetUID(live.GetUID())
	dry.SetResourceVersion(live.GetResourceVersion())
	metrics.DryRuns.Inc()
	if err := writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(fieldManager), client.ForceOwnership, client.DryRunAll); err != nil {
		return false
	}
	if !sameStored(live, dry) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.verdict == nil || len(c.verdict) >= maxConfirmed {
		c.verdict = map[types.UID]verdictKey{}
	}
	c.verdict[live.GetUID()] = key
	return true
}

// sameStored reports whether two forms of one object the API server
// returned are the same, resourceVersion and managedFields timestamps
// aside. The server orders managedFields entries by timestamp and stamps
// the applying manager's entry anew on every apply, so entries are
// compared in a fixed order.
func sameStored(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		c.SetResourceVersion("")
		mf := c.GetManagedFields()
		for i := range mf {
			mf[i].Time = nil
		}
		slices.SortFunc(mf, func(x, y metav1.ManagedFieldsEntry) int {
			return strings.Compare(entryKey(x), entryKey(y))
		})
		c.SetManagedFields(mf)
		return c.Object
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// decided remembers, by object UID, the last "no write" decision: the
// live resourceVersion it was made against and a hash of the desired
// object. The same desired object over the same live object decides the
// same way, so the local apply is not computed again until either
// changes (or the schemas do: see Schemas.ForgetGroup).
type decided struct {
	mu sync.Mutex
	m  map[types.UID]decidedKey
}

type decidedKey struct {
	resourceVersion string
	desired         [sha256.Size]byte
}

func decidedKeyOf(desired, live *unstructured.Unstructured) (decidedKey, bool) {
	b, err := json.Marshal(desired.Object)
	if err != nil || live.GetResourceVersion() == "" || live.GetUID() == "" {
		return decidedKey{}, false
	}
	return decidedKey{resourceVersion: live.GetResourceVersion(), desired: sha256.Sum256(b)}, true
}

func (d *decided) unchanged(uid types.UID, key decidedKey) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[uid]
	return ok && v == key
}

func (d *decided) remember(uid types.UID, key decidedKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil || len(d.m) >= maxConfirmed {
		d.m = map[types.UID]decidedKey{}
	}
	d.m[uid] = key
}

func (d *decided) forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m = nil
}

// Applied records that stored is what the API server answered to stencil's
// apply of desired (created, changed or found unchanged by the write). A
// server-side apply is idempotent: the same applied configuration, by the
// same field manager, onto the object it produced changes nothing. So a
// later Decide of the same desired object over live at stored's
// resourceVersion is no write without the local apply, until live moves
// (another writer, a status update: the local apply decides again) or the
// desired object changes. This is what spares a set's second pass, after
// the pass that created its members, the local apply of each of them; and a
// member the local apply keeps finding changed while the server stores it
// unchanged (stencil's apply Reapplied) the request of every later pass.
// A nil Schemas, or stored without a UID or resourceVersion, records nothing.
func (s *Schemas) Applied(desired, stored *unstructured.Unstructured) {
	if s == nil {
		return
	}
	if key, ok := decidedKeyOf(desired, stored); ok {
		s.decided.remember(stored.GetUID(), key)
	}
}

// Decision is the no-change decision of one apply.
type Decision struct {
	// Write is true when the apply must be sent: it would change the
	// object or the field manager's field set, or that could not be
	// decided.
	Write bool
	// Changed names, as paths (never values), fields the apply would
	// change, at most MaxChanged.
	Changed []string
	// Why says, when Write is true and Changed is empty, what made the
	// apply necessary (for logs; never values).
	Why string
	// Asked is true when the local apply left the answer to the API
	// server, which a server-side dry run settled.
	Asked bool
	// Authors are the other field managers whose changes to the member
	// the apply undoes (drift), with the fields: known from the member's
	// managedFields where the local apply typed it.
	Authors []Author
}

// Decide is the no-change decision of an apply of desired over live: the
// local server-side apply (upToDate), settled by a server-side dry run
// through writer when fields the server may default leave it open. A nil
// Schemas always writes.
func (s *Schemas) Decide(ctx context.Context, writer client.Client, desired, live *unstructured.Unstructured) Decision {
	d := s.upToDate(ctx, desired, live)
	if d.confirm && s.confirmed.unchanged(ctx, writer, s.fieldManager, desired, live, d.key) {
		d.write = false
	}
	return Decision{Write: d.write, Changed: d.changed, Why: d.why, Asked: d.confirm, Authors: d.authors}
}
