// Package testenv starts the real control plane that stencil's tests run
// against: kube-apiserver and etcd built from source by hack/k8s-assets.sh
// (found through KUBEBUILDER_ASSETS, which `make test` sets), with stencil's
// CRDs from config/crd installed.
//
// Tests never fake the API server: apply, prune and status tests talk to this
// one. A package starts one environment in TestMain and gives every test its
// own namespace. Tests of the admission webhook install its configuration
// (InstallWebhooks, envtest's webhook install options: a server on
// loopback with its own CA), limited to their namespaces, and start a
// controller that serves it (StartWith).
//
// Package suite (internal/testenv/suite) is what a package of controller
// tests shares: suite.Run in its TestMain starts the environment and one
// controller running as its own ServiceAccount with config/rbac's
// permissions, and its helpers (waits for a Composition's conditions,
// the Bundles, users, grants and webhooks the tests make) serve every
// such package, so that reconcile's tests live beside the package whose
// behaviour they test.
package testenv
