// Package plan turns a render into what is applied, with no client: the
// controller, the admission webhook and the CLI (`stencil render`,
// `stencil diff`) all plan through it, so what they show is what the
// controller applies.
//
//   - plan.go: RenderInput, the one builder of a render's input (labels
//     and annotations without the metadata tools write; UID and
//     .Release.IsUpgrade from the live parent, LiveComposition), and
//     NewPlan: render through a Renderer, place namespaced objects in the
//     parent's namespace, refuse what the Bundle's permissions do not allow
//     (RefusedError) and two objects that are one once placed, label every
//     member applyset.kubernetes.io/part-of=<id>, drop server-owned fields,
//     sort into apply order.
//   - owners.go: OwnerReference, the parent's reference every member in
//     its namespace carries (none offline, none on a member stencil never
//     deletes: helm.sh/resource-policy: keep, stencil.dev/prune:
//     disabled), for the tools that nest objects by owner (Argo CD).
//   - kinds.go: APIs, what planning asks of the cluster about kinds. The
//     API server's kinds win: a kind's scope is the cluster's (offline,
//     the built-in list's); a CRD in the render is believed only for a
//     kind nothing serves, and a rendered CRD that would define a kind
//     served otherwise (built in, in a group the API server, an
//     aggregated API server or stencil serves, a CRD this set does not
//     own) or carry a cluster admin's opt-in for a Bundle to publish is
//     refused (RefusedError with Conflict: the parent's reason is
//     KindConflict). A group of Kubernetes' own that only CRDs serve
//     (gateway.networking.k8s.io) is as any other.
//   - order.go: the apply order and its stages (CRDs, Namespaces, RBAC,
//     ServiceAccounts, ConfigMaps and Secrets, Services, workloads, custom
//     resources, webhooks last).
//   - hooks.go: Helm hook classes: which objects are hooks, their points,
//     weights, delete policies and revision, and what a live hook says of
//     its run.
//
// A Renderer is handed in: the controller command's is a pool of worker
// processes (internal/sandbox) that bounds each render's time and memory.
package plan
