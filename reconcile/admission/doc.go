// Package admission is stencil's validating admission webhook for
// Compositions and the instances of published kinds, and its mutating
// webhook for Compositions.
//
//   - handler.go: the review. A create or update is rendered through the
//     Composition reconciler's own path (its bundle cache, served APIs,
//     renderer and limits, plan.NewPlan), so what it refuses is what
//     a pass would stall on; a server dry run also gets warnings saying
//     what the children would become (warnings.go: applyset.DryRun and
//     prune.Candidates as the parent's writer) and which of the
//     Bundle's status outputs would change (status.PreviewOutputs over
//     the dry run's objects). It never writes.
//     A review that overruns its deadline is allowed with a warning.
//   - mutate.go: the mutating review (MutatePath, the configuration
//     DefaultMutatingConfigName): a create, or an update that changes
//     what a parent renders, gets the ApplySet metadata the controller's
//     first pass would write before any member (id label, tooling, the
//     group-kinds and namespaces annotations widened by the render's
//     inventory; on create, the finalizer), from the same render the
//     review does (reviewer.plan, as the controller: no identity is
//     needed, nothing is written). It never denies; whatever it cannot
//     decide is allowed unchanged and the controller writes the metadata
//     itself. Only a verified caller (below) gets a patch, since it tells
//     the render's kinds and namespaces. The annotations it sets are a
//     superset of what the members will be before the controller applies
//     any, so a crash before the first pass leaves every member findable;
//     the controller still records its inventory (status.inventory) only
//     in its own status write, so an annotation admission adds is never
//     pruned or deleted from until a pass recorded it.
//   - bundle.go: the review of Bundles (BundleWebhookPath, config/webhook's
//     bundles.stencil.dev): rollout gates that do not compile are
//     refused; a server dry run renders every parent (live, every shard)
//     with the new content and with its current revision, and warns how
//     many would change, fail to render, be held or stay pinned, with
//     the wave plan; parents are named only to a user who may get their
//     kinds everywhere.
//   - The conversion webhook of the published kinds with several
//     versions (package conversion) is registered beside them, at the
//     subtree publish.ConversionWebhookPath/ (each CRD at
//     publish.ConversionPath of its token), behind a guard of its own
//     kind: the API server calls conversion webhooks with no client
//     certificate, so the caller is told by the token in the path. Only a
//     caller presenting the token of a CRD stencil keeps (the API server,
//     or someone who may read stencil's CRDs) gets the API server's
//     budget, by the token's kind, and a conversion; any other caller is
//     a stranger, on the strangers' budget, and is answered 404 before
//     its body is read (stencil_webhook_throttled_total, why token).
//   - A parent's pin is checked here (reviewer.plan renders the revision
//     the parent would render: engine.Engine.LoadFor).
//   - Who may use a parent's ServiceAccount is not checked here: the
//     API server checks it itself, with stencil's ValidatingAdmissionPolicy
//     (package authority), before any webhook is called. A review refuses
//     a parent in a namespace its Bundle's spec.namespaceSelector does
//     not select, as the controller would stall it; a dry run is
//     previewed as the parent's account only when that policy checks its
//     kind (Engine.Checked).
//   - webhookconfig.go, mutating_config.go: keep the published kinds'
//     entries of the ValidatingWebhookConfiguration and of the
//     MutatingWebhookConfiguration for the kinds package published
//     serves (one controller, which takes the notices of the kinds
//     served): the render's and the mutation's, failing open. Entries of
//     the access check an earlier stencil served are removed.
//   - package serving: the webhook server's certificate (rotated and
//     injected with cert-controller, or files), its TLS settings, and the
//     loopback pointing of the configuration at a controller outside the
//     cluster.
//   - guard.go, and package server: the webhook server (controller-runtime's
//     paths and metrics, served with read, header, write and idle
//     timeouts) and what one caller may cost a path: a rate per caller,
//     the API server's in-flight requests and everyone else's from
//     separate budgets, a bounded body; the API server is told by its
//     client certificate, verified in the TLS handshake before a request
//     takes a slot.
//   - authn.go: who the caller is (its verified client certificate, put in
//     the review's context by admission.Webhook.WithContextFunc), the
//     server's TLS settings (client CA, HTTP/2 off) and the
//     SubjectAccessReviews of the requester that filter a preview.
//
// Client authentication: the server verifies a client certificate against
// ServingOptions.ClientCAFile when the caller presents one
// (tls.VerifyClientCertIfGiven) rather than requiring one
// (RequireAndVerifyClientCert). The webhook also validates: an API server
// not (yet) configured with a client certificate would, under
// RequireAndVerifyClientCert, fail every handshake, which failurePolicy
// Ignore turns into admitting everything unreviewed; the manager's
// readiness check dials the server without a certificate too. The
// security property does not rest on the handshake: a review whose caller
// is not verified never gets a live value (below). A certificate that is
// presented and does not verify fails the handshake.
//
// Invariants: a dry run's preview (anything read from the cluster: a
// child's existence, paths or values, a member's name) goes only to a
// caller whose client certificate the client CA signed (and that bears
// one of ServingOptions.ClientNames, when set); others get the review of
// their own object and withheldWarning, and no dry-run apply or member
// listing is made for them. In a preview, a child of a kind the request's
// user may not get (SubjectAccessReview) says only that it exists,
// whatever the dry run found; the status outputs, which may read any
// member, are shown only when the user may get every child's kind and
// the parent's. Warnings never carry a Secret's value nor
// the values of an object the requester did not write (an object the
// apply would adopt is listed by changed paths only); every warning stays
// under the API server's limits. SetupWithManager is called by the controller command
// beside the Composition controller, whose Options.EveryReplica must be set.
package admission
