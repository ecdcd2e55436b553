// Package blast is the blast radius of a Bundle change, what `stencil
// diff --bundle DIR` (or `diff -f bundle.yaml`) shows: every Composition
// and instance the new version of a Bundle reaches, rendered with it and
// dry-run applied as the controller would, each parent's changed
// children, the parents that would fail, and a summary line.
//
// Workflow (Run):
//   - blast.go: the flags (--bundle-name, -l, -o) and the new Version (a
//     folder, a Bundle manifest or chart given with --bundle, or the one
//     Bundle manifest of -f), which replaces the cluster's Bundle of its
//     name;
//   - targets.go: the parents it reaches: the Compositions whose
//     spec.bundle names it and the instances of the kinds it publishes,
//     the new version's and the cluster version's, in -n and -l;
//   - waves.go: the wave each parent would move in, by the rollout policy
//     and the controller's order (rollout.Plan), printed as headers;
//   - run.go: each parent rendered with the new version, its children
//     dry-run applied and its prune set listed, a few at a time
//     (blastParallel), the results printed in order as they are done;
//     stays.go: the pinned and held parents, which stay on their
//     revision, rendered within the new version's permissions and crds
//     policy; outputs.go: the status outputs the change would move;
//   - print.go: a parent's lines, the summary and the exit status.
//
// Invariants: nothing is written (server-side dry runs, read as the
// user); Secret values never show; a parent being deleted is not counted
// (the controller only finalizes it), nor an instance whose CRD is not
// kept for the Bundle (a note says so); a parent that cannot be checked
// is reported and the others still are. The exit status is 2 when any
// parent would fail to render or apply or could not be checked, else 1
// when any would change, be left alone or held, else 0.
//
//	v, stdin, err := bf.NewVersion(planFlags, stdin) // nil: -f holds parents
//	code, err := blast.Run(ctx, kube, v, planFlags, bf, out, stderr)
package blast
