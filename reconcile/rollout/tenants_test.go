package rollout_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// What a tenant cannot do to a shared Bundle's rollout (issue 37, item 5):
// make its parent a canary, choose its place in the batches, or stop the
// rollout of everyone else by failing its own parents.

// TestCanaryIgnoresParentLabels: a canary chooses parents by what the
// Bundle's author and the cluster admin control (the Namespaces' labels);
// a parent's own labels, which its tenant writes, choose nothing unless
// the author trusts them.
func TestCanaryIgnoresParentLabels(t *testing.T) {
	stage := map[string]string{"stage": "canary"}
	tenant := map[string]string{"tier": "internal"} // a label the tenant put on its own parent
	for _, tc := range []struct {
		name                string
		canary              v1alpha1.RolloutCanary
		nsLabels, labels    map[string]string
		want, wantHasCanary bool
	}{
		{"a parent's labels alone choose nobody", v1alpha1.RolloutCanary{Selector: &metav1.LabelSelector{MatchLabels: tenant}}, nil, tenant, false, false},
		{"within a canary namespace, parent labels are not needed", v1alpha1.RolloutCanary{NamespaceSelector: &metav1.LabelSelector{MatchLabels: stage},
			Selector: &metav1.LabelSelector{MatchLabels: tenant}}, stage, nil, true, true},
		{"a tenant's namespace is no canary", v1alpha1.RolloutCanary{NamespaceSelector: &metav1.LabelSelector{MatchLabels: stage},
			Selector: &metav1.LabelSelector{MatchLabels: tenant}}, nil, tenant, false, true},
		{"parent labels trusted by the author", v1alpha1.RolloutCanary{Selector: &metav1.LabelSelector{MatchLabels: tenant}, TrustParentLabels: true}, nil, tenant, true, true},
		{"trusted, within the namespaces", v1alpha1.RolloutCanary{NamespaceSelector: &metav1.LabelSelector{MatchLabels: stage},
			Selector: &metav1.LabelSelector{MatchLabels: tenant}, TrustParentLabels: true}, stage, nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves, Canary: &tc.canary}
			if got := rollout.Canary(pol, tc.nsLabels, tc.labels); got != tc.want {
				t.Errorf("Canary = %v, want %v", got, tc.want)
			}
			if got := rollout.HasCanary(*pol); got != tc.wantHasCanary {
				t.Errorf("HasCanary = %v, want %v", got, tc.wantHasCanary)
			}
		})
	}
}

// TestLabelledParentIsNoCanary: a tenant that labels its parent to match
// an untrusted canary selector is moved in the batches like any other,
// and the first wave is a batch.
func TestLabelledParentIsNoCanary(t *testing.T) {
	pol := waves(false, 0)
	pol.Canary = &v1alpha1.RolloutCanary{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}}
	f := newFleet(t, 100, pol)
	f.parents[42].Labels = map[string]string{"canary": "true"}
	f.setContent(hashB)
	f.step()
	f.converge()
	if st := f.status(); st.Canary || st.Waves != 3 {
		t.Errorf("rollout %+v: want no canary wave, 3 batches (1, 10, the rest)", st)
	}
	if f.on(revB) != 1 {
		t.Errorf("%d parents on B after the first wave, want 1", f.on(revB))
	}
}

// publicRank is how a parent was ranked before the order was keyed: a hash
// of what anybody knows, so a tenant could choose a name that sorts first.
func publicRank(bundle string, k rollout.Key) string {
	h := sha256.Sum256([]byte(bundle + "\x00" + k.Kind + "\x00" + k.Namespace + "\x00" + k.Name))
	return hex.EncodeToString(h[:8])
}

// TestOrderIsKeyed: the order of the batches is a keyed hash: a name a
// tenant chooses to sort first by every hash it can compute does not
// sort first under the controller's key, and two keys order the same
// parents differently.
func TestOrderIsKeyed(t *testing.T) {
	key := rollout.Key{Kind: "Composition.stencil.dev", Namespace: "team-x"}
	var parents []rollout.Key
	for i := range 200 {
		parents = append(parents, rollout.Key{Kind: key.Kind, Namespace: fmt.Sprintf("team-%d", i%7), Name: fmt.Sprintf("app-%d", i)})
	}
	// The tenant grinds names until one sorts first among the parents by
	// the public hash (and by the zero Order's, the one without a key).
	lowest := func(rank func(rollout.Key) string, keys []rollout.Key) rollout.Key {
		return slices.MinFunc(keys, func(a, b rollout.Key) int { return strings.Compare(rank(a), rank(b)) })
	}
	public := func(k rollout.Key) string { return publicRank("web", k) }
	unkeyed := func(k rollout.Key) string { return rollout.Order{}.Rank("web", k) }
	var chosen rollout.Key
	for i := 0; ; i++ {
		key.Name = fmt.Sprintf("aaa-%d", i)
		all := append(slices.Clone(parents), key)
		if lowest(public, all) == key && lowest(unkeyed, all) == key {
			chosen = key
			break
		}
	}
	all := append(slices.Clone(parents), chosen)
	k1, k2 := rollout.NewOrder([]byte("0123456789abcdef0123456789abcdef")), rollout.NewOrder([]byte("fedcba9876543210fedcba9876543210"))
	for _, o := range []rollout.Order{k1, k2} {
		if first := lowest(func(k rollout.Key) string { return o.Rank("web", k) }, all); first == chosen {
			t.Errorf("the name chosen to sort first (%s) sorts first under the key too", chosen.Name)
		}
	}
	if lowest(func(k rollout.Key) string { return k1.Rank("web", k) }, all) == lowest(func(k rollout.Key) string { return k2.Rank("web", k) }, all) {
		t.Error("two keys put the same parent first")
	}
	if !k1.Keyed() || (rollout.Order{}).Keyed() {
		t.Error("Keyed")
	}
}

// stallIn stalls, at the fleet's clock, every parent on revision B in
// namespace ns (their tenant breaks them once their wave moved them).
func (f *fleet) stallIn(ns string) {
	for _, p := range f.parents {
		if p.Key.Namespace == ns && p.On("web") == revB {
			stall(p, v1alpha1.ReasonRenderFailed, "templates/x.yaml:3: broken by its tenant", metav1.NewTime(f.now))
		}
	}
}

// rollTo runs the fleet's rollout of B, its parents converging, breaking
// the parents of namespaces broken as soon as they are moved, until it
// stops (at most 20 steps).
func (f *fleet) rollTo(broken ...string) v1alpha1.RolloutStatus {
	f.setContent(hashB)
	for range 20 {
		f.step()
		f.converge()
		f.now = f.now.Add(time.Second)
		for _, ns := range broken {
			f.stallIn(ns)
		}
		if st := f.status(); st.Phase != v1alpha1.RolloutProgressing {
			return st
		}
	}
	return f.status()
}

// TestOneTenantCannotFailTheRollout: the parents of one tenant failing,
// in whatever wave, stop nobody else's rollout: it completes, naming the
// tenant; two tenants failing stop it (the default failureThreshold).
func TestOneTenantCannotFailTheRollout(t *testing.T) {
	f := newFleet(t, 30, waves(false, 0))
	st := f.rollTo("team-1")
	if st.Phase != v1alpha1.RolloutComplete || st.Stable != revB || !slices.Equal(st.FailedTenants, []string{"team-1"}) {
		t.Fatalf("rollout %+v: one tenant's failures stopped it", st)
	}
	if st.Ready != 20 || st.Updated != 30 {
		t.Errorf("rollout %+v: want every parent moved, the 20 of the 2 other tenants Ready", st)
	}
	if ev := fmt.Sprint(f.events); !strings.Contains(ev, v1alpha1.ReasonFailureTolerated) || !strings.Contains(ev, "team-1") {
		t.Errorf("events %v: want the tolerated tenant named", ev)
	}

	f = newFleet(t, 30, waves(false, 0))
	st = f.rollTo("team-1", "team-2")
	if st.Phase != v1alpha1.RolloutRolledBack || !strings.Contains(st.Message, "in 2 tenants (failureThreshold 2)") {
		t.Fatalf("rollout %+v: want two tenants' failures to roll it back", st)
	}
	f.converge()
	if f.on(revA) != 30 {
		t.Errorf("%d parents on A after the rollback, want 30", f.on(revA))
	}
}

// TestFailedTenantsAccumulate: tenants failing one per wave are counted
// over the rollout, not per wave: the second stops it.
func TestFailedTenantsAccumulate(t *testing.T) {
	f := newFleet(t, 300, waves(false, 0))
	f.setContent(hashB)
	f.step()
	f.converge()
	var first string
	for _, p := range f.parents {
		if p.On("web") == revB {
			first = p.Key.Namespace
		}
	}
	f.now = f.now.Add(time.Second)
	f.stallIn(first) // wave 1's parent
	f.step()
	st := f.status()
	if st.Phase != v1alpha1.RolloutProgressing || !slices.Equal(st.FailedTenants, []string{first}) || len(st.Failed) != 1 {
		t.Fatalf("after wave 1's tenant failed: %+v", st)
	}
	f.converge()
	f.now = f.now.Add(time.Second)
	other := ""
	for _, p := range f.parents {
		if p.On("web") == revB && p.Key.Namespace != first {
			other = p.Key.Namespace
			break
		}
	}
	f.stallIn(other)
	f.step()
	if st := f.status(); st.Phase != v1alpha1.RolloutRolledBack {
		t.Errorf("after a second tenant failed in a later wave: %+v, want rolled back", st)
	}
}

// TestTenantLabelGroupsNamespaces: namespaces whose tenantLabel says the
// same tenant count once.
func TestTenantLabelGroupsNamespaces(t *testing.T) {
	pol := waves(false, 0)
	pol.TenantLabel = "example.com/tenant"
	f := newFleet(t, 30, pol)
	for _, p := range f.parents {
		tenant := "acme"
		if p.Key.Namespace == "team-0" {
			tenant = "other"
		}
		p.NamespaceLabels[pol.TenantLabel] = tenant
	}
	st := f.rollTo("team-1", "team-2") // both acme's
	if st.Phase != v1alpha1.RolloutComplete || !slices.Equal(st.FailedTenants, []string{"acme"}) {
		t.Errorf("rollout %+v: want one tenant (acme) tolerated", st)
	}
}

// TestCanaryFailureStops: the canaries are whom the author chose: their
// failure stops the rollout, whatever the threshold.
func TestCanaryFailureStops(t *testing.T) {
	f := newFleet(t, 30, waves(true, 0)) // team-0 is the canary
	st := f.rollTo("team-0")
	if st.Phase != v1alpha1.RolloutRolledBack || st.Wave != 1 || !strings.Contains(st.Message, "canary wave") {
		t.Errorf("rollout %+v: want the canary's failure to roll it back in wave 1", st)
	}
}

// TestOneTenantBundleStops: a Bundle whose parents are all one tenant's
// stops on that tenant's failure: the threshold is at most the tenants
// there are.
func TestOneTenantBundleStops(t *testing.T) {
	f := newFleet(t, 30, waves(false, 0))
	for _, p := range f.parents {
		p.Key.Namespace = "solo"
	}
	f.step()
	f.converge()
	st := f.rollTo("solo")
	if st.Phase != v1alpha1.RolloutRolledBack || !strings.Contains(st.Message, "failureThreshold 1") {
		t.Errorf("rollout %+v: want a single tenant's own rollout stopped", st)
	}
}

// TestLateTenantIsTolerated: a tenant whose parent never becomes Ready
// holds its wave until the progress deadline, then is tolerated: the
// others go on.
func TestLateTenantIsTolerated(t *testing.T) {
	pol := waves(false, 0)
	pol.ProgressDeadline = &metav1.Duration{Duration: time.Minute}
	f := newFleet(t, 30, pol)
	f.setContent(hashB)
	f.step()
	var late *rollout.Parent
	for _, p := range f.parents {
		if rollout.Selected(&f.b.Status.Rollouts[0], rollout.Order{}, "web", p.Key, false) {
			late = p
		}
	}
	late.Status.BundleRevision = hashB
	meta.SetStatusCondition(&late.Status.Conditions, metav1.Condition{Type: "Ready", Status: "False", Reason: "Progressing", LastTransitionTime: metav1.NewTime(f.now)})
	f.now = f.now.Add(30 * time.Second)
	f.step()
	if st := f.status(); st.Wave != 1 || st.Phase != v1alpha1.RolloutProgressing {
		t.Fatalf("before the deadline: %+v, want wave 1 waiting", st)
	}
	f.now = f.now.Add(31 * time.Second)
	f.step()
	st := f.status()
	if st.Phase != v1alpha1.RolloutProgressing || st.Wave < 2 || !slices.Equal(st.FailedTenants, []string{late.Key.Namespace}) {
		t.Fatalf("past the deadline: %+v, want the next wave, the late tenant tolerated", st)
	}
	if d := cmp.Diff([]string{"NotReady"}, []string{st.Failed[0].Reason}); d != "" {
		t.Errorf("failed (-want +got):\n%s", d)
	}
}
