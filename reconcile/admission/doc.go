// Package admission is stencil's validating admission webhook for
// Compositions and the instances of published kinds.
//
//   - handler.go: the review. A create or update is rendered through the
//     Composition reconciler's own path (its bundle cache, served APIs,
//     renderer and limits, plan.NewPlan), so what it refuses is what
//     a pass would stall on; a server dry run also gets warnings saying
//     what the children would become (warnings.go: applyset.DryRun and
//     reconcile.PruneCandidates as the parent's writer). It never writes.
//     A review that overruns its deadline is allowed with a warning.
//   - webhookconfig.go: keeps the published kinds' entry of the
//     ValidatingWebhookConfiguration (the kinds package published serves).
//   - serving*.go: the webhook server's certificate (rotated and injected
//     with cert-controller, or files), and the loopback pointing of the
//     configuration at a controller outside the cluster.
//
// Invariants: warnings never carry a Secret's value nor the values of an
// object the requester did not write (an object the apply would adopt is
// listed by changed paths only); every warning stays under the API
// server's limits. SetupWithManager is called by the controller command
// beside the Composition controller, whose Options.EveryReplica must be set.
package admission
