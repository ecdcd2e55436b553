// Package rollout moves the parents of a Bundle from one revision to the
// next: all at once (the default, as before revisions) or in waves gated
// on their health, and decides which revision each parent renders.
//
// # Responsibilities
//
//   - assign.go: Assign, the revision a parent renders (its pin, if the
//     Bundle allows it; else the rollout's target once the rollout moved
//     it, else the stable revision; a parent whose values the revision
//     refuses stalls, Refused, or stays on its own where the Bundle allows
//     holding). Pure, and cheap enough for every pass, the skipped ones
//     included: a parent's place in a rollout is its rank against the
//     rollout's bound, and the canary selectors; no list of the other
//     parents is needed. Placement is what of a rollout a parent's
//     assignment depends on.
//   - order.go: Order.Rank, a parent's rank: HMAC-SHA256, under a key
//     only the controller holds (OrderKey: the Secret OrderSecret of its
//     namespace, made as it starts), of the Bundle and the parent's kind,
//     namespace and name, so no tenant chooses its place by naming.
//   - step.go: Step, one look at a rollout (pure): it starts one when the
//     Bundle's content changed, starts each wave (the canary, then
//     batches: Batches and Plan, waves.go), judges the parents moved so
//     far (wave.go, health.go), evaluates the gates over the wave
//     (gate.go, CEL), waits out the soak, completes, or stops the
//     rollout (Halt, or Rollback: every moved parent goes back) once
//     parents of failureThreshold tenants failed (fewer are tolerated,
//     counted once per tenant over the rollout; the canary wave stops at
//     its first), and counts (count.go).
//   - controller.go, revisions.go, setup.go: the Reconciler writes what a
//     Step decided (the Bundle's status.rollouts entry of its shard,
//     events on the Bundle), records the Bundle's new content as a
//     BundleRevision, writes each revision's count of parents, and deletes
//     the revisions nobody needs (package revision). Parents' changes
//     reach it coalesced (Coalesce): the Compositions through its own
//     watch, the instances of published kinds through a Notifier the
//     kinds' controllers feed.
//
// # Invariants
//
//   - A parent moves only by its own pass: the rollout writes no parent.
//     It writes the Bundle's status (over the Bundle as read, since the
//     Bundle controller writes it too), BundleRevisions and events, as the
//     controller.
//   - The order of parents is the same in every rollout of a Bundle, and
//     a wave's bound only grows; a rollout rolled back assigns every
//     parent the stable revision, one halted moves nobody further.
//   - Nobody moves to a revision that refuses its values; nobody stays on
//     a withdrawn revision, nor on an older one its values keep it on
//     unless the Bundle allows holding.
//   - No tenant decides who moves first or whether the fleet stops: a
//     canary is chosen by the Namespaces' labels (a parent's own only
//     where the author trusts them), the batches by the keyed order, and
//     one tenant's failures alone stop only a Bundle that tenant alone
//     uses.
//   - A Step is a function of the Bundle, the parents as cached and the
//     clock: a lost notice costs a late wave, never a wrong one (a rollout
//     under way is looked at again within 30 seconds).
//   - Each shard of controllers rolls its own parents (an entry of
//     status.rollouts each); revisions are shared, and kept while any
//     shard counts a parent on one or pinned to one.
//
// # Example
//
// A Bundle that moves one parent, then 10, then 100, then the rest, each
// wave Ready for 10 seconds before the next, and goes back when a wave
// fails:
//
//	rollout:
//	  strategy: Waves
//	  batch: {size: 1, growth: Exponential, factor: 10}
//	  soak: 10s
//	  progressDeadline: 5m
//	  onFailure: Rollback
//
// docs/bundles.md (Revisions and rollouts) is the user's manual and the
// rationale.
package rollout
