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
