// Package cli holds stencil's cobra commands: controller, render, diff,
// bundle pack, bundle lint, bundle rbac and version. render and diff take
// Compositions and instances of the kinds Bundles publish (parents.go
// finds an instance's Bundle by its kind, in the cluster or --bundle). diff
// --bundle without -f (or -f holding a Bundle) shows the blast radius of a
// Bundle change instead: every Composition and instance that uses the
// Bundle, rendered with its new version (blast*.go). The commands are thin: rendering is
// package templates, and planning, dry-run apply and prune previews are
// package reconcile, the very code the controller runs, so what the commands
// show is what the controller does. Every command that renders does it in
// the controller's sandbox (internal/sandbox) under the same
// --render-timeout and --render-memory flags. Kubeconfig, context and namespace flags
// come from k8s.io/cli-runtime and behave as in kubectl.
//
// Below it: controller (`stencil controller`: its flags and the wiring of
// the controllers and the webhook) and flags (the values and render-limit
// flags the commands share).
package cli
