// Package conversion is the conversion webhook of the published kinds
// that have several versions: an http.Handler of
// apiextensions.k8s.io/v1 ConversionReviews, served at the subtree
// publish.ConversionWebhookPath/ on the controller's webhook server,
// beside the admission webhooks (package admission registers it, behind
// a guard).
//
// # Responsibilities
//
//   - Who is answered: only a caller presenting a CRD's token. The API
//     server presents no client certificate to a CRD's conversion webhook
//     (apiextensions-apiserver calls it with no credentials: the
//     AdmissionConfiguration's kubeconfig is the admission webhooks'
//     only), so the caller cannot be told from anyone else as the
//     admission webhooks tell it. Instead each CRD stencil keeps sends
//     its conversions to publish.ConversionPath(token), a random token of
//     its own (package published makes it once and keeps it): whoever
//     presents it is the API server, or someone who may read stencil's
//     CRDs. The known tokens are CRDTokens, a cache of the CRDs labelled
//     publish.LabelBundle kept on every replica (every replica serves the
//     webhook), looked up by their SHA-256. A request whose path holds no
//     known token (none, or one of no CRD) is answered 404 before its
//     body is read: no work for strangers (the guard also gives them the
//     strangers' budget, by remote host; a known token gets the API
//     server's, by its kind). A token converts only its CRD's kind: a
//     review of any other kind is a Failure naming why. What a caller
//     gets is its own objects converted by the Bundle's rules (CEL over
//     the object alone, bounded in cost): no object of the cluster is
//     read for it but the cached Bundles, and nothing is written; the
//     webhook port is also fenced by the NetworkPolicy of
//     config/network-policy.
//   - Which rules convert: for each object, the Bundle that publishes its
//     group and kind (engine.PublishingBundle, read from the controller's
//     cache: the Bundles are cached by the manager). Its converter (a
//     Builder, publish.Converter in the controller) is built once per
//     Bundle name, generation and revision and kept in a bounded cache
//     (Handler.cacheSize converters, dropped after an hour unused).
//   - What an answer is: every object converted to the desired version,
//     metadata as it came but for the annotations the converter set
//     (the annotation conversion.stencil.dev/<version>
//     that keeps what the target version cannot hold), or, on the first
//     object that does not convert, result Failure with a message naming
//     the object, the versions, and what the converter said (the rule's
//     field and expression). The API server then refuses the request
//     that needed the conversion with that message.
//
// # Invariants
//
// The handler never writes to the cluster and reads nothing but the
// Bundles (and, when several claim a kind, its CRD's labels) and the
// cached tokens; a request without a known token reads nothing at all.
// An object whose apiVersion already is the desired version is returned
// as it came. The uid of the review is echoed.
package conversion
