package rollout

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// health is how a parent the rollout moved stands.
type health int

const (
	// pending: not yet Ready on the target.
	pending health = iota
	// done: Ready on the target, for its current generation.
	done
	// excluded: not Ready since before its wave started (broken before
	// the rollout reached it): it neither holds the wave back nor fails
	// it, and is named in the status.
	excluded
	// failed: Stalled since its wave started (a render that fails, an
	// object refused, a member that failed, ...).
	failed
)

// judge says how p, moved to target (a revision name) by a wave that
// started at started, stands. Condition times are kept to the second, as
// the API server keeps them: a parent that stalls within the second its
// wave started counts as failed.
func judge(p *Parent, bundle, target string, started time.Time) (health, string, string) {
	if p.On(bundle) == target && p.Ready() {
		return done, "", ""
	}
	since := started.Truncate(time.Second)
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStalled); c != nil && c.Status == "True" && !c.LastTransitionTime.Time.Before(since) {
		return failed, c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status != "True" && c.LastTransitionTime.Time.Before(since) {
		return excluded, c.Reason, fmt.Sprintf("not Ready since before its wave (%s): not counted", c.Reason)
	}
	return pending, "", ""
}
