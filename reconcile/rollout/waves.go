package rollout

import (
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Defaults of a rollout policy.
const (
	// DefaultProgressDeadline is a wave's progressDeadline when unset, a
	// Deployment's own (600 s).
	DefaultProgressDeadline = 10 * time.Minute
	// DefaultFactor is an Exponential batch's factor when unset.
	DefaultFactor = 2
)

// Policy is b's rollout policy with its defaults: AllAtOnce when unset.
func Policy(b *v1alpha1.Bundle) v1alpha1.RolloutPolicy {
	var p v1alpha1.RolloutPolicy
	if b.Spec.Rollout != nil {
		p = *b.Spec.Rollout.DeepCopy()
	}
	if p.Strategy == "" {
		p.Strategy = v1alpha1.RolloutAllAtOnce
	}
	if p.OnFailure == "" {
		p.OnFailure = v1alpha1.FailureRollback
	}
	if p.Batch.Growth == "" {
		p.Batch.Growth = v1alpha1.GrowthExponential
	}
	if p.Batch.Factor < 2 {
		p.Batch.Factor = DefaultFactor
	}
	if p.Batch.Size == nil {
		one := intstr.FromInt32(1)
		p.Batch.Size = &one
	}
	return p
}

// deadline is pol's progressDeadline or its default.
func deadline(pol v1alpha1.RolloutPolicy) time.Duration {
	if pol.ProgressDeadline != nil && pol.ProgressDeadline.Duration > 0 {
		return pol.ProgressDeadline.Duration
	}
	return DefaultProgressDeadline
}

// soak is pol's soak.
func soak(pol v1alpha1.RolloutPolicy) time.Duration {
	if pol.Soak != nil && pol.Soak.Duration > 0 {
		return pol.Soak.Duration
	}
	return 0
}

// HasCanary reports whether pol's first wave is a canary: one that
// selects by the namespaces, or by the parents' labels where it trusts
// them.
func HasCanary(pol v1alpha1.RolloutPolicy) bool { return hasCanary(pol) }

// hasCanary is HasCanary.
func hasCanary(pol v1alpha1.RolloutPolicy) bool {
	c := pol.Canary
	return c != nil && (c.NamespaceSelector != nil || c.Selector != nil && c.TrustParentLabels)
}

// Batches returns how many parents pol's batches have moved, in all,
// after each wave, for n parents (canaries aside): size, then growing
// linearly or exponentially, the last reaching n. n = 0 gives one
// empty batch.
func Batches(pol v1alpha1.RolloutPolicy, n int) []int {
	size := 1
	if pol.Batch.Size != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(pol.Batch.Size, n, true); err == nil {
			size = v
		}
	}
	size = max(size, 1)
	var out []int
	total, wave := 0, size
	for {
		total = min(total+wave, n)
		out = append(out, total)
		if total >= n {
			return out
		}
		if pol.Batch.Growth == v1alpha1.GrowthExponential {
			next := float64(wave) * float64(max(pol.Batch.Factor, 2))
			wave = int(math.Min(next, float64(n)))
		}
	}
}

// Waves is how many waves pol makes of n batch parents: the canary, when
// pol has one, and the batches.
func Waves(pol v1alpha1.RolloutPolicy, n int) int {
	w := len(Batches(pol, n))
	if hasCanary(pol) {
		w++
	}
	return w
}

// Plan is the wave each parent would move in if a rollout of b started
// now with these parents, ranked by o (the wave plan `stencil diff
// --bundle` prints):
// 0 for a parent that does not follow the Bundle (its pin stands), else
// 1 and on, and how many waves there are. AllAtOnce is one wave.
func Plan(b *v1alpha1.Bundle, o Order, parents []*Parent) ([]int, int) {
	pol := Policy(b)
	out := make([]int, len(parents))
	type ranked struct {
		rank string
		i    int
	}
	var rest []ranked
	canary := 0
	for i, p := range parents {
		if pin, _ := EffectivePin(b, p.Pin); pin != "" {
			continue
		}
		switch {
		case pol.Strategy != v1alpha1.RolloutWaves:
			out[i] = 1
		case hasCanary(pol) && Canary(&pol, p.NamespaceLabels, p.Labels):
			out[i], canary = 1, 1
		default:
			rest = append(rest, ranked{o.Rank(b.Name, p.Key), i})
		}
	}
	if pol.Strategy != v1alpha1.RolloutWaves {
		return out, 1
	}
	if hasCanary(pol) {
		canary = 1
	}
	slices.SortFunc(rest, func(x, y ranked) int { return strings.Compare(x.rank, y.rank) })
	batches := Batches(pol, len(rest))
	k := 0
	for n, r := range rest {
		for n >= batches[k] {
			k++
		}
		out[r.i] = canary + k + 1
	}
	return out, canary + len(batches)
}
