package rollout_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

const (
	hashA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hashB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hashC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

var (
	revA = revision.Name("web", hashA)
	revB = revision.Name("web", hashB)
	revC = revision.Name("web", hashC)
)

// fleet is a Bundle and its parents, which a test moves between Steps as
// their passes would.
type fleet struct {
	t       *testing.T
	b       *v1alpha1.Bundle
	parents []*rollout.Parent
	now     time.Time
	events  []rollout.Event
	refuse  map[string]bool // parent name → its values are refused by revB
}

func newFleet(t *testing.T, n int, pol *v1alpha1.RolloutPolicy) *fleet {
	f := &fleet{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), refuse: map[string]bool{}}
	f.b = &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1, Annotations: map[string]string{}},
		Spec: v1alpha1.BundleSpec{Rollout: pol}}
	f.setContent(hashA)
	for i := range n {
		ns := "team-" + fmt.Sprint(i%3)
		p := &rollout.Parent{Key: rollout.Key{Kind: "Composition.stencil.dev", Namespace: ns, Name: fmt.Sprintf("p%03d", i)},
			NamespaceLabels: map[string]string{"kubernetes.io/metadata.name": ns}, Generation: 1}
		f.parents = append(f.parents, p)
	}
	f.step() // records A as stable
	f.converge()
	return f
}

func (f *fleet) setContent(hash string) {
	f.b.Generation++
	f.b.Status.ObservedGeneration, f.b.Status.Revision = f.b.Generation, hash
}

// step runs one Step and keeps its status.
func (f *fleet) step() rollout.Outcome {
	f.t.Helper()
	out := rollout.Step{Bundle: f.b, Parents: f.parents, Now: f.now, Accepts: func(p *rollout.Parent, rev string) (bool, string) {
		if rev == revB && f.refuse[p.Key.Name] {
			return false, "spec.port: Required value"
		}
		return true, ""
	}}.Run(context.Background())
	f.b.Status.Rollouts = []v1alpha1.RolloutStatus{out.Status}
	f.events = append(f.events, out.Events...)
	return out
}

// converge runs every parent's pass: each renders what Assign says and
// becomes Ready there, unless bad says it stalls.
func (f *fleet) converge(bad ...string) {
	known := func(name string) (int64, bool) {
		n, ok := map[string]int64{revA: 1, revB: 2, revC: 3}[name]
		return n, ok
	}
	for _, p := range f.parents {
		a := rollout.Assign(rollout.Inputs{Bundle: f.b, Key: p.Key, Pin: p.Pin, On: p.On("web"), Known: known,
			Canary: rollout.Canary(f.b.Spec.Rollout, p.NamespaceLabels, p.Labels),
			Accepts: func(rev string) (bool, string) {
				if rev == revB && f.refuse[p.Key.Name] {
					return false, "refused"
				}
				return true, ""
			}})
		hash := map[string]string{revA: hashA, revB: hashB, revC: hashC}[a.Revision]
		at := metav1.NewTime(f.now)
		if a.Refused {
			stall(p, v1alpha1.ReasonValuesRefused, a.Message, at)
			continue
		}
		if hash == hashB && contains(bad, p.Key.Name) {
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Stalled", Status: "True", Reason: "RenderFailed", Message: "templates/x.yaml:3: boom", LastTransitionTime: at})
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Ready", Status: "False", Reason: "RenderFailed", LastTransitionTime: at})
			p.Status.ObservedGeneration = p.Generation
			continue
		}
		meta.RemoveStatusCondition(&p.Status.Conditions, "Stalled")
		p.Status.BundleRevision = hash
		p.Status.ObservedGeneration = p.Generation
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Ready", Status: "True", Reason: "Ready", LastTransitionTime: at})
	}
}

// stall is a parent's pass that stalls for reason, rendering nothing.
func stall(p *rollout.Parent, reason, msg string, at metav1.Time) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Stalled", Status: "True", Reason: reason, Message: msg, LastTransitionTime: at})
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Ready", Status: "False", Reason: reason, LastTransitionTime: at})
	p.Status.ObservedGeneration = p.Generation
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (f *fleet) on(rev string) int {
	n := 0
	for _, p := range f.parents {
		if p.On("web") == rev {
			n++
		}
	}
	return n
}

func (f *fleet) status() v1alpha1.RolloutStatus { return f.b.Status.Rollouts[0] }

func waves(canary bool, soak time.Duration) *v1alpha1.RolloutPolicy {
	pol := &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves, Soak: &metav1.Duration{Duration: soak},
		Batch: v1alpha1.RolloutBatch{Size: ptr.To(intstr.FromInt32(1)), Growth: v1alpha1.GrowthExponential, Factor: 10}}
	if canary {
		pol.Canary = &v1alpha1.RolloutCanary{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "team-0"}}}
	}
	return pol
}

func TestAllAtOnceIsTheDefault(t *testing.T) {
	f := newFleet(t, 20, nil)
	if got := f.on(revA); got != 20 {
		t.Fatalf("%d parents on A, want 20", got)
	}
	f.setContent(hashB)
	f.step()
	if st := f.status(); st.Stable != revB || st.Target != "" || st.Phase != v1alpha1.RolloutComplete {
		t.Fatalf("after a change: %+v, want B stable at once", st)
	}
	f.converge()
	f.step()
	if got, st := f.on(revB), f.status(); got != 20 || st.Updated != 20 || st.Ready != 20 {
		t.Errorf("%d on B, status %+v", got, st)
	}
}

func TestWavesOneTenHundredAndTheRest(t *testing.T) {
	f := newFleet(t, 1000, waves(false, 10*time.Second))
	f.setContent(hashB)
	var moved []int
	for range 20 {
		f.step()
		f.converge()
		if n := f.on(revB); len(moved) == 0 || moved[len(moved)-1] != n {
			moved = append(moved, n)
		}
		if f.status().Phase == v1alpha1.RolloutComplete {
			break
		}
		f.now = f.now.Add(11 * time.Second) // past the soak
	}
	if d := cmp.Diff([]int{1, 11, 111, 1000}, moved); d != "" {
		t.Errorf("parents on B after each wave (-want +got):\n%s", d)
	}
	if st := f.status(); st.Stable != revB || st.Phase != v1alpha1.RolloutComplete {
		t.Errorf("final status %+v", st)
	}
}

func TestSoakHoldsTheNextWave(t *testing.T) {
	f := newFleet(t, 10, waves(false, time.Minute))
	f.setContent(hashB)
	f.step()
	f.converge()
	out := f.step() // wave 1 Ready: the soak starts
	if f.on(revB) != 1 || out.Requeue <= 0 || !strings.Contains(f.status().Message, "soaking") {
		t.Fatalf("on B %d, requeue %s, message %q", f.on(revB), out.Requeue, f.status().Message)
	}
	f.now = f.now.Add(30 * time.Second)
	f.step()
	f.converge()
	if f.on(revB) != 1 {
		t.Fatalf("wave 2 started within the soak: %d on B", f.on(revB))
	}
	f.now = f.now.Add(31 * time.Second)
	f.step()
	f.converge()
	if f.on(revB) != 10 {
		t.Errorf("after the soak, %d on B, want 10 (1, then the rest)", f.on(revB))
	}
}

func TestCanaryFirst(t *testing.T) {
	f := newFleet(t, 30, waves(true, 0))
	f.setContent(hashB)
	f.step()
	f.converge()
	for _, p := range f.parents {
		if (p.On("web") == revB) != (p.Key.Namespace == "team-0") {
			t.Errorf("%s on %s after the canary wave", p.Key, p.On("web"))
		}
	}
	if st := f.status(); st.Wave != 1 || st.Waves != 4 || !st.Canary {
		t.Errorf("canary wave status %+v", st) // canary + 1 + 10 + the rest of 20
	}
}

func TestFailingWaveRollsBack(t *testing.T) {
	f := newFleet(t, 1000, waves(false, 0))
	f.setContent(hashB)
	f.step()
	f.converge()
	f.step()
	f.converge() // wave 2: 10 more
	f.now = f.now.Add(time.Second)
	f.step() // wave 3 starts: 100 more, every one of which stalls
	var wave3 []string
	for _, p := range f.parents {
		if p.On("web") != revB && rollout.Selected(&f.b.Status.Rollouts[0], rollout.Order{}, "web", p.Key, false) {
			wave3 = append(wave3, p.Key.Name)
		}
	}
	f.converge(wave3...)
	f.step()
	st := f.status()
	if st.Phase != v1alpha1.RolloutRolledBack || len(st.Failed) != 10 || st.Failed[0].Reason != "RenderFailed" {
		t.Fatalf("status %+v, want RolledBack naming 10 of the failed parents", st)
	}
	f.converge()
	if got := f.on(revA); got != 1000 {
		t.Errorf("%d parents on A after the rollback, want 1000", got)
	}
	if last := f.events[len(f.events)-1]; last.Reason != v1alpha1.ReasonRolledBack || !strings.Contains(last.Note, "RenderFailed") {
		t.Errorf("last event %+v", last)
	}
	// A retry tries the wave again.
	f.b.Annotations[v1alpha1.AnnotationRolloutRetry] = "1"
	f.step()
	f.converge()
	if got, st := f.on(revB), f.status(); got != 111 || st.Phase != v1alpha1.RolloutProgressing {
		t.Errorf("after a retry %d on B (want 111), phase %s", got, st.Phase)
	}
}

func TestHaltKeepsMovedParents(t *testing.T) {
	pol := waves(false, 0)
	pol.OnFailure = v1alpha1.FailureHalt
	pol.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
	pol.FailureThreshold = ptr.To[int32](1) // one tenant's failure stops it
	f := newFleet(t, 100, pol)
	f.setContent(hashB)
	f.step()
	// Wave 1's parent never becomes Ready: its pass moved it, nothing more.
	for _, p := range f.parents {
		if rollout.Selected(&f.b.Status.Rollouts[0], rollout.Order{}, "web", p.Key, false) {
			p.Status.BundleRevision = hashB
			meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: "Ready", Status: "False", Reason: "Progressing", LastTransitionTime: metav1.NewTime(f.now)})
		}
	}
	f.now = f.now.Add(30 * time.Second)
	f.step()
	if f.status().Phase != v1alpha1.RolloutProgressing {
		t.Fatalf("halted before the deadline: %+v", f.status())
	}
	f.now = f.now.Add(31 * time.Second)
	f.step()
	if st := f.status(); st.Phase != v1alpha1.RolloutHalted || !strings.Contains(st.Message, "progress deadline") {
		t.Fatalf("status %+v", st)
	}
	f.step()
	if got := f.on(revB); got != 1 {
		t.Errorf("%d on B after the halt, want the one moved", got)
	}
	// Promote goes on with the next wave.
	f.b.Annotations[v1alpha1.AnnotationRolloutPromote] = "now"
	f.step()
	f.converge()
	if got := f.on(revB); got != 11 {
		t.Errorf("after a promote %d on B, want 11", got)
	}
}

func TestPausedRolloutMovesNobody(t *testing.T) {
	f := newFleet(t, 10, waves(false, 0))
	f.setContent(hashB)
	f.step()
	f.converge()
	f.b.Spec.Rollout.Paused = true
	for range 3 {
		f.step()
		f.converge()
		f.now = f.now.Add(time.Hour)
	}
	if st := f.status(); st.Phase != v1alpha1.RolloutPaused || f.on(revB) != 1 {
		t.Fatalf("paused: %+v, %d on B", st, f.on(revB))
	}
	f.b.Spec.Rollout.Paused = false
	f.step()
	f.converge()
	if f.on(revB) != 10 {
		t.Errorf("resumed: %d on B, want 10", f.on(revB))
	}
}

// TestRefusedValuesStayBehind: where the Bundle allows holding, a parent
// whose values the new revision refuses stays on its revision.
func TestRefusedValuesStayBehind(t *testing.T) {
	f := newFleet(t, 10, nil)
	f.b.Spec.Revisions = &v1alpha1.RevisionPolicy{Holding: v1alpha1.HoldingAllowed}
	f.refuse["p003"] = true
	f.setContent(hashB)
	f.step()
	f.converge()
	f.step()
	st := f.status()
	if f.on(revB) != 9 || st.Held != 1 || st.HeldParents[0].Name != "p003" {
		t.Fatalf("on B %d, held %d %+v", f.on(revB), st.Held, st.HeldParents)
	}
	if ev := f.events; !strings.Contains(fmt.Sprint(ev), "refuses the values of 1 parents") {
		t.Errorf("events %v", ev)
	}
	if st.Stable != revB {
		t.Errorf("stable %s: a held parent holds back no rollout", st.Stable)
	}
}

// TestRefusedValuesStall: by default a parent whose values the revision
// its wave brings refuses is not kept on the one it is on: it stalls,
// naming the values and the revision, and neither holds the wave back
// nor fails it.
func TestRefusedValuesStall(t *testing.T) {
	f := newFleet(t, 10, waves(false, 0))
	f.b.Spec.Revisions = &v1alpha1.RevisionPolicy{Pinning: v1alpha1.PinningDisallowed}
	for _, p := range f.parents {
		f.refuse[p.Key.Name] = true // whichever the first wave moves
	}
	f.refuse["p003"] = false
	f.setContent(hashB)
	for range 5 {
		f.step()
		f.converge()
	}
	st := f.status()
	if st.Phase != v1alpha1.RolloutComplete || st.Stable != revB || st.Held != 9 {
		t.Fatalf("rollout %+v, want complete with 9 parents refused", st)
	}
	for _, p := range f.parents {
		c := meta.FindStatusCondition(p.Status.Conditions, "Stalled")
		switch {
		case p.Key.Name == "p003":
			if p.On("web") != revB || c != nil {
				t.Errorf("%s on %s, Stalled %+v", p.Key.Name, p.On("web"), c)
			}
		case c == nil || c.Reason != v1alpha1.ReasonValuesRefused || !strings.Contains(c.Message, revB) || !strings.Contains(c.Message, "refuses its values: refused"):
			t.Errorf("%s Stalled %+v, want ValuesRefused naming %s and the values", p.Key.Name, c, revB)
		case p.On("web") != revA:
			t.Errorf("%s on %s: a refused parent renders nothing", p.Key.Name, p.On("web"))
		}
	}
	if ev := fmt.Sprint(f.events); !strings.Contains(ev, "which stall until their values change") {
		t.Errorf("events %v", ev)
	}
}

func TestSupersededRolloutKeepsItsParents(t *testing.T) {
	f := newFleet(t, 200, waves(false, 0))
	f.setContent(hashB)
	f.step()
	f.converge()
	f.step()
	f.converge() // 11 on B
	f.setContent(hashC)
	f.step()
	f.converge()
	if a, b, c := f.on(revA), f.on(revB), f.on(revC); c != 1 || b != 10 || a != 189 {
		t.Errorf("A %d, B %d, C %d after C superseded B: want those on B to stay until C reaches them", a, b, c)
	}
	for range 10 {
		f.step()
		f.converge()
	}
	if f.on(revC) != 200 || f.status().Stable != revC {
		t.Errorf("C on %d, stable %s", f.on(revC), f.status().Stable)
	}
}

func TestPinsAndWithdrawals(t *testing.T) {
	f := newFleet(t, 3, nil)
	f.parents[0].Pin = revA
	f.setContent(hashB)
	f.step()
	f.converge()
	if f.parents[0].On("web") != revA || f.parents[1].On("web") != revB {
		t.Fatalf("pinned on %s, follower on %s", f.parents[0].On("web"), f.parents[1].On("web"))
	}
	if st := f.status(); st.Parents != 2 {
		t.Errorf("followers %d, want 2: a pinned parent is no follower", st.Parents)
	}
	f.b.Spec.Revisions = &v1alpha1.RevisionPolicy{Withdrawn: []string{revA}}
	a := rollout.Assign(rollout.Inputs{Bundle: f.b, Key: f.parents[0].Key, Pin: revA, On: revA})
	if a.Revision != revB || a.Reason != v1alpha1.ReasonPinRefused {
		t.Errorf("a pin of a withdrawn revision: %+v", a)
	}
	a = rollout.Assign(rollout.Inputs{Bundle: f.b, Key: f.parents[0].Key, Pin: "web-0000000000"})
	if !a.NotFound {
		t.Errorf("a pin of no revision: %+v", a)
	}
}

func TestPlanIsWhatTheRolloutDoes(t *testing.T) {
	f := newFleet(t, 300, waves(true, 0))
	plan, total := rollout.Plan(f.b, rollout.Order{}, f.parents)
	if total != 5 {
		t.Fatalf("%d waves, want 5 (the canary's 100, then 1, 10, 100, the rest)", total)
	}
	f.setContent(hashB)
	for w := 1; w <= total; w++ {
		f.step()
		f.converge()
		for i, p := range f.parents {
			if moved := p.On("web") == revB; moved != (plan[i] <= w) {
				t.Fatalf("after wave %d, %s (planned in wave %d) moved: %v", w, p.Key, plan[i], moved)
			}
		}
	}
}
