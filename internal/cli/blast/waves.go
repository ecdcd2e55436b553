package blast

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// The wave plan of a Bundle change: in which wave of the Bundle's rollout
// each parent would move (rollout.Plan, as the controller's rollout moves
// them), each shard's parents apart.

// wavePlan places each target in its wave of policy's rollout: the new
// version's spec.rollout and spec.revisions, else the cluster Bundle's.
// Targets come back sorted by shard, wave, namespace, name and kind; a
// pinned one (its pin standing under the new version) is in wave 0. The
// batches' parents are ranked by the controller's key (the Secret
// rollout.OrderSecret of namespace controllerNS), read as the user: a
// user who may not read it sees the batches' parents together, in the
// first batch's wave, marked unordered.
func wavePlan(ctx context.Context, s *session.Session, name string, newSpec v1alpha1.BundleSpec, cluster *v1alpha1.Bundle, targets []target, controllerNS string) []target {
	policy := &v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Rollout: newSpec.Rollout, Revisions: newSpec.Revisions}}
	policy.Name = name
	if cluster != nil {
		if policy.Spec.Rollout == nil {
			policy.Spec.Rollout = cluster.Spec.Rollout
		}
		if policy.Spec.Revisions == nil {
			policy.Spec.Revisions = cluster.Spec.Revisions
		}
	}
	order, keyed := rolloutOrder(ctx, s, controllerNS)
	pol := rollout.Policy(policy)
	first := 1 // the first batch's wave
	if rollout.HasCanary(pol) {
		first = 2
	}
	labels := map[string]map[string]string{}
	byShard := map[string][]int{}
	for i := range targets {
		t := &targets[i]
		t.shard = t.parent.GetLabels()[shard.Label]
		t.pin, _ = rollout.EffectivePin(policy, t.parent.ParentSpec().BundleRevision)
		byShard[t.shard] = append(byShard[t.shard], i)
	}
	for _, idx := range byShard {
		parents := make([]*rollout.Parent, len(idx))
		for j, i := range idx {
			p := rollout.FromParent(targets[i].parent)
			p.NamespaceLabels = namespaceLabels(ctx, s, labels, p.Key.Namespace)
			parents[j] = p
		}
		waves, total := rollout.Plan(policy, order, parents)
		for j, i := range idx {
			targets[i].wave, targets[i].waves = waves[j], total
			if !keyed && pol.Strategy == v1alpha1.RolloutWaves && waves[j] >= first {
				targets[i].wave, targets[i].unordered = first, true
			}
		}
	}
	targets = slices.Clone(targets)
	slices.SortStableFunc(targets, func(a, b target) int {
		return cmp.Or(cmp.Compare(a.shard, b.shard), cmp.Compare(a.wave, b.wave))
	})
	return targets
}

// rolloutOrder is the controller's rollout order, read from its Secret in
// namespace ns as the user; the zero Order and false when the user may
// not read it, or the controller has not made it yet.
func rolloutOrder(ctx context.Context, s *session.Session, ns string) (rollout.Order, bool) {
	if s.Client == nil {
		return rollout.Order{}, false
	}
	secret := &corev1.Secret{}
	if err := s.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: rollout.OrderSecret}, secret); err != nil {
		return rollout.Order{}, false
	}
	key := secret.Data[rollout.OrderSecretKey]
	return rollout.NewOrder(key), len(key) > 0
}

// namespaceLabels reads (once) the labels of namespace ns, for the
// canary's namespace selector; none when it cannot be read.
func namespaceLabels(ctx context.Context, s *session.Session, seen map[string]map[string]string, ns string) map[string]string {
	if l, ok := seen[ns]; ok {
		return l
	}
	n := &corev1.Namespace{}
	if s.Client != nil && s.Client.Get(ctx, client.ObjectKey{Name: ns}, n) == nil {
		seen[ns] = n.Labels
	} else {
		seen[ns] = nil
	}
	return seen[ns]
}

// waveHeader writes, before r when it starts another wave than the last
// result's, the wave's header: "## wave 2/4 (10 parents)", with the
// shard when there are several. Only a rollout in waves has them.
type waveHeader struct {
	inWaves bool
	counts  map[[2]string]int // shard, wave → parents
	last    [2]string
	started bool
}

func newWaveHeader(strategy v1alpha1.RolloutStrategy, targets []target) *waveHeader {
	h := &waveHeader{inWaves: strategy == v1alpha1.RolloutWaves, counts: map[[2]string]int{}}
	for _, t := range targets {
		h.counts[[2]string{t.shard, fmt.Sprint(t.wave)}]++
	}
	return h
}

func (h *waveHeader) print(w io.Writer, r *blastResult) {
	if !h.inWaves {
		return
	}
	k := [2]string{r.shard, fmt.Sprint(r.wave)}
	if h.started && k == h.last {
		return
	}
	h.started, h.last = true, k
	var where []string
	if r.shard != "" {
		where = append(where, "shard "+r.shard)
	}
	n := h.counts[k]
	if r.wave == 0 {
		fmt.Fprintf(w, "## %spinned (%d): not moved\n", strings.Join(append(where, ""), ": "), n)
		return
	}
	if r.unordered {
		fmt.Fprintf(w, "## %swaves %d-%d (%d parents, in an order keyed by the controller's Secret %s, which you may not read)\n",
			strings.Join(append(where, ""), ": "), r.wave, r.waves, n, rollout.OrderSecret)
		return
	}
	parents := "parents"
	if n == 1 {
		parents = "parent"
	}
	fmt.Fprintf(w, "## %swave %d/%d (%d %s)\n", strings.Join(append(where, ""), ": "), r.wave, r.waves, n, parents)
}
