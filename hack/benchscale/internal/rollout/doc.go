// Package rollout is the rollout benchmark (-rollout, make
// bench-rollout): one Bundle behind N parents in -rollout-namespaces
// namespaces, each a Deployment of one pod (on kwok's nodes, which Run
// adds, so it really rolls out) and a ConfigMap. Three changes of the
// Bundle, in order:
//
//  1. all at once (the default policy): a new image, until every parent
//     is Ready on the new revision;
//  2. in waves of 1, 10, 100 and the rest (Exponential, factor 10), each
//     soaking -rollout-soak: another image, until the rollout is complete
//     and every parent Ready on it; per wave, its time and the status
//     writes made in it;
//  3. a revision whose pods are never scheduled (its nodeSelector names no
//     node, a template mistake that still renders), rolled out in the same
//     waves with a progress deadline of -rollout-deadline: the wave that
//     meets it stops the rollout (Rollback), and the parents that ever left
//     the revision before are counted.
//
// Requests are the controller's, counted in the API server's audit log:
// Run refuses a cluster without one. What it measured is res.Rollout
// (table.Rollout).
package rollout
