// Package kubeapi owns what the engine knows of the Kubernetes API without
// a cluster: the built-in resources of the release stencil builds
// (BuiltinResources, generated into zz_generated.builtinapis.go by
// hack/k8s/builtinapis through `make generate`), the API versions they
// serve (what .Capabilities holds when no cluster is asked) and the
// built-in kinds' scope (ClusterScoped).
//
// # Invariants
//
//   - The list is the release's own discovery documents, never edited by
//     hand; `make verify` fails when it is stale.
//   - Nothing here reads a cluster, a file or the environment.
//
// # Example
//
//	slices.Contains(kubeapi.APIVersions(), "apps/v1/Deployment") // true
//	kubeapi.ClusterScoped("", "Namespace")                        // true
package kubeapi
