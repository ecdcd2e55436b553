package applyset

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A member written flapWrites times within flapWindow while its
// Composition's inputs stayed the same is flapping: something else (another
// controller, a mutating webhook, a person) keeps changing what stencil
// sets, and every pass writes it back. The Composition is then Stalled with
// reason Flapping and stencil stops writing it until its inputs change.
const (
	flapWrites = 5
	flapWindow = 10 * time.Minute
)

// FlapDetector keeps, in memory, the recent writes of each Composition's
// members under its current inputs. It is bounded: a Composition's history
// is reset when its inputs change and dropped when it is deleted, a
// member's writes older than flapWindow are dropped, and at most flapWrites
// are kept per member.
type FlapDetector struct {
	mu      sync.Mutex
	history map[types.NamespacedName]*flapHistory
}

type flapHistory struct {
	key    string                 // inputKey the writes were made under
	writes map[string][]flapWrite // member ref → its recent writes, oldest first
}

type flapWrite struct {
	at     time.Time
	fields []string
}

// Flap names a member that keeps being written.
type Flap struct {
	member string
	writes int
	fields []string // the field paths that changed, over those writes
}

func (f Flap) String() string {
	fields := "unknown"
	if len(f.fields) > 0 {
		fields = strings.Join(f.fields, ", ")
	}
	return fmt.Sprintf("%s was written %d times within %s while the Composition and its Bundle did not change; fields that keep changing: %s. "+
		"Another controller, a webhook or a person is changing what stencil sets: stencil stops writing this Composition until its spec or its Bundle changes",
		f.member, f.writes, flapWindow, fields)
}

// Record adds the writes (Created or Configured results) of one pass made
// under inputs key and returns the first member that now flaps.
func (d *FlapDetector) Record(name types.NamespacedName, key string, results []ApplyResult, now time.Time) (Flap, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.history[name]
	if h == nil || h.key != key {
		h = &flapHistory{key: key, writes: map[string][]flapWrite{}}
		if d.history == nil {
			d.history = map[types.NamespacedName]*flapHistory{}
		}
		d.history[name] = h
	}
	for member, ws := range h.writes {
		ws = slices.DeleteFunc(ws, func(w flapWrite) bool { return now.Sub(w.at) > flapWindow })
		if len(ws) == 0 {
			delete(h.writes, member)
		} else {
			h.writes[member] = ws
		}
	}
	var found Flap
	for _, res := range results {
		if res.Action != Created && res.Action != Configured {
			continue
		}
		member := Ref(res.Object)
		ws := append(h.writes[member], flapWrite{at: now, fields: res.Changed})
		if len(ws) > flapWrites {
			ws = ws[len(ws)-flapWrites:]
		}
		h.writes[member] = ws
		if len(ws) >= flapWrites && found.member == "" {
			found = Flap{member: member, writes: len(ws), fields: unionFields(ws)}
		}
	}
	return found, found.member != ""
}

// Forget drops a Composition's history (it is gone).
func (d *FlapDetector) Forget(name types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.history, name)
}

func unionFields(ws []flapWrite) []string {
	var out []string
	for _, w := range ws {
		for _, f := range w.fields {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out
}
