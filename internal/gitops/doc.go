// Package gitops reads the health of stencil's objects the way GitOps
// tools read it, so that tests can hold what those tools will show:
//
//   - ArgoCD runs the Lua health checks of an argocd-cm ConfigMap
//     (config/argocd/argocd-cm.yaml) as Argo CD does: the customization
//     key matched by group and kind (an exact key, else a glob), the
//     script run in gopher-lua, the interpreter Argo CD embeds, with its
//     default libraries and obj as the only global, its table read back
//     through gopher-json, and, before any script, Argo CD's own verdict
//     on an object being deleted.
//   - FluxStatus polls objects' kstatus with fluxcd/cli-utils' status
//     poller, which kustomize-controller's health checks (fluxcd/pkg/ssa
//     WaitForSet) use; kustomize-controller pins fluxcd/cli-utils v1.2.2,
//     whose pkg/kstatus is the same code as v1.3.0's in go.mod.
//
// It holds no copy of either tool's code: the pieces named above are the
// libraries they use, called through their public API.
package gitops
