// Package serving serves stencil's admission webhook as `stencil
// controller` does: the webhook server's serving certificate (CertsRotate:
// a CA and certificate the controller makes, keeps in a Secret, writes to
// the certificate folder, renews and injects into the webhook
// configurations' caBundle; CertsFiles: files someone else keeps), its TLS
// settings (ServingOptions.TLSOptions: HTTP/2 off unless enabled, client
// certificates verified against the client CA when presented), and, for
// a controller outside the cluster (ServingOptions.Host), the
// configuration's entries pointed at it (loopback.go).
//
// Invariants:
//   - The webhook server starts listening only once its certificate is in
//     place and its CA in the configuration (Serving.Ready): the API
//     server never calls a server it cannot verify.
//   - The certificate is renewed before it expires and the Secret is the
//     one source of it for every replica.
//   - The loopback rewrites only the client configuration (URL) of
//     stencil's own entries, keeping their paths.
package serving
