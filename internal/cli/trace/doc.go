// Package trace is `stencil trace PARENT` (and `kubectl stencil trace`,
// the binary answering as kubectl-stencil): the tree of a parent's
// members as the caller may see them, each with its kind, name, readiness
// (kstatus), reason and age, and what the parent's status says it is in:
// the Bundle revision, the rollout of that Bundle (when the caller may
// read the Bundle), what it waits on (observed values held back, a
// stall, hooks), and what its last render looked up (status.lookups:
// the keys and what each found, never the answers).
//
//   - trace.go: the command: PARENT as kubectl names objects
//     (composition/NAME, KIND/NAME of a published kind, KIND NAME), the
//     kubeconfig flags of kubectl (--kubeconfig, --context, -n, and
//     KUBECONFIG), -o wide|yaml|json, --watch.
//   - collect.go: Collect reads the parent and each member its status
//     lists, live, with the caller's credentials: a member the caller may
//     not get is shown as forbidden, one gone as not found, never an
//     error. Members nest under the member their ownerReferences name,
//     else under the parent.
//   - print.go: the table (a tree in the NAME column, the age as kubectl
//     get prints it) and the structured output (Trace, as YAML or JSON).
//   - watch.go: --watch prints again when the parent or a member changes,
//     from watches of the parent and of each member kind (by the set's
//     part-of label), never by polling; an output equal to the last one
//     is not printed again.
//
// Everything is read, nothing written: the caller's RBAC decides what
// the trace shows.
package trace
