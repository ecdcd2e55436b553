// Package published serves the kinds Bundles publish (spec.api).
//
//   - published.go: the Bundle controller (BundleReconciler). It reports
//     whether a Bundle loads, server-side applies the CRD of its kind
//     (built and checked by package publish, labelled with the Bundle; a
//     CRD of another Bundle, or not stencil's, is never touched), waits for
//     it to be Established, checks that the controller may serve the kind,
//     and has the kind served. The CRD, and so every instance and their
//     children, is deleted only with the Bundle and only when
//     api.deletionPolicy is Delete (BundleFinalizer holds the Bundle).
//   - kinds.go: Kinds, one running controller per kind served, started
//     and stopped as Bundles publish and stop publishing; each reconciles
//     instances through the Composition pass
//     (reconcile.CompositionReconciler.ServeKind).
//
// PublishingBundle finds the Bundle that publishes a kind, for the
// admission webhook and the CLI alike.
package published
