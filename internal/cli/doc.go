// Package cli is stencil's command tree: NewRootCommand wires the
// kubeconfig flags (k8s.io/cli-runtime, as in kubectl) and the commands
// controller, render, diff, bundle init, bundle pack, bundle lint,
// bundle rbac, migrate, test and version; ExitCode is the process's exit status for the error a command
// returned. Each command is a package of its own below it, over the
// pieces they share:
//
//   - controller: `stencil controller`, its flags and the wiring of the
//     controllers and the webhook;
//   - render: `stencil render`, the objects the controller would apply;
//   - diff: `stencil diff`, what the controller would change, for the
//     parents of -f, or for a Bundle change through blast: its blast
//     radius, every parent that uses the Bundle rendered with the new
//     version;
//   - bundle: `stencil bundle init` (its scaffold), `pack`, `lint` and
//     `rbac`;
//   - bundletest: `stencil test`, a bundle's tests/ cases rendered
//     offline and checked;
//   - migrate: `stencil migrate`, a GitOps repository's instances and
//     Compositions rewritten in place for a Bundle's new version or
//     values schema;
//   - session: what a command knows of the cluster (or nothing, offline)
//     and how it renders a parent with it; parents: the Compositions and
//     instances of a -f file; pull: charts pulled from registries;
//     preview: a dry run's diffs and status outputs; flags: the values,
//     render-limit and planning flags the commands share; exit: the exit
//     status.
//
// The commands are thin: rendering is package templates, and planning,
// dry-run apply and prune previews are package reconcile, the very code
// the controller runs, so what the commands show is what the controller
// does. Every command that renders does it in the controller's sandbox
// (internal/sandbox) under the same --render-timeout and --render-memory
// flags.
//
// The tests of this package run the commands end to end, as a user
// does, against a real kube-apiserver and the controller (TestMain); the
// packages below hold the table tests of their own helpers (blast's
// summary and wave headers, preview's masked diffs, the flags' parsing).
package cli
