// Package published serves the kinds Bundles publish (spec.api).
//
//   - published.go: the Bundle controller (BundleReconciler). It reports
//     whether a Bundle loads, keeps the CRD of its kind (crd.go), waits
//     for it to be Established, checks that the controller may serve the
//     kind, and has the kind served.
//   - crd.go: the CRD of a Bundle's kind (built and checked by package
//     publish, labelled with the Bundle) is created only if absent and
//     then server-side applied only while it is labelled for the Bundle
//     and unchanged since read; a CRD the Bundle did not make (by hand,
//     another Bundle's, an orphan) is never written: KindConflict, and
//     the Bundle serves no kind, unless a cluster admin labelled it for
//     the Bundle, which then takes its whole spec over. The CRD, and so
//     every instance and their children, is deleted only with the Bundle
//     and only when api.deletionPolicy is Delete (BundleFinalizer holds
//     the Bundle).
//   - conversion.go: a kind of several versions converts through
//     stencil's conversion webhook (package conversion): its CRD's
//     spec.conversion.webhook.clientConfig is the clientConfig of the
//     ValidatingWebhookConfiguration's base entry (Conversion: its
//     Service or URL, with the path /convert/<token>, and its caBundle),
//     kept so as the configuration changes (watched by name) and its CA
//     rotates. The token (publish.ConversionPath: 32 random bytes, hex)
//     is who may get a conversion: only a caller presenting it (the API
//     server, or someone who may read stencil's CRDs); strangers get a
//     404 and no work (package conversion). It is made when the CRD is
//     created, or first gets a webhook, and then kept as the live CRD has
//     it (withToken), so a pass writes no new one.
//     With no webhook server, or no such entry (or no CA yet), the
//     Bundle is ConversionUnavailable and its CRD is left as it was. The
//     kind's controller reads instances in the render version
//     (publish.GVK); the CRD is written by the controller's own identity.
//   - storage.go: a CRD that would drop a version its
//     status.storedVersions still holds is not applied
//     (VersionStillStored, with how many instances remain): the storage
//     migration (package reconcile/migration) must trim it first.
//   - approval.go: in a group of Kubernetes' own (k8s.io, kubernetes.io)
//     no CRD is ever created; one is kept only where a cluster admin
//     made it with the api-approved.kubernetes.io annotation (set by
//     anyone but stencil) and labelled it for the Bundle: the admin's
//     opt-in, the way the API server's own. A refusal says how to opt
//     in.
//   - source.go: a Bundle with spec.source has it resolved (as the
//     controller, see package pull) when its generation changes and
//     every interval after (a digest-pinned reference once), and
//     status.source records the chart pulled, with SourceReady; a resolve
//     that fails leaves status.source as it was, so parents keep
//     rendering the chart pulled before, and says so. With
//     spec.source.verify, the record holds the keys' fingerprint and the
//     generation it verified for; when either changed and the resolve
//     failed, the recorded chart is verified again (reverify): it stays,
//     or it is recorded as unverified and its parents stall. The Secrets
//     of Bundle sources are watched (metadata only), so a rotated key is
//     checked at once. A Bundle never pulled is Ready=False with the
//     pull's reason.
//   - kinds.go: Kinds, one running controller per kind served, started
//     and stopped as Bundles publish and stop publishing; each reconciles
//     instances through the Composition pass
//     (reconcile.ServeKind, through ServeFunc).
//
// SetupWithManager also sets up the rollout controller (package
// rollout) of the controller's shard, with the Composition reconciler as
// its lister of parents and its loader of revisions, and the Bundle
// controller writes the Bundle's status over the Bundle as read, since
// the rollout controllers write its status.rollouts.
//
// engine.PublishingBundle finds the Bundle that publishes a kind, for the
// admission webhook and the CLI alike.
package published
