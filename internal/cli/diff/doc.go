// Package diff is `stencil diff`: what the controller would change in the
// cluster. With -f holding Compositions and instances of published kinds,
// each is rendered as the controller renders it (package session), every
// child is server-side dry-run applied (field manager stencil, forced
// ownership) and diff prints a unified diff of live against would-be
// objects, the chart CRDs it would create or update, the members that
// would be pruned or orphaned, any refusal, and the status outputs that
// would change. With --bundle and no -f, or -f holding one Bundle
// manifest, it shows the blast radius of that Bundle change instead
// (package blast).
//
// Files: command.go (the command, its help, and the choice between the
// two modes), diff.go (the diff of -f's parents), outputs.go (their
// status outputs).
//
// Invariants: nothing is written, and every read is made as the user; a
// parent that fails to render is reported and the others are still
// diffed; the exit status is 0 when nothing would change, 1 when
// something would (a refusal the controller would stall with counts as a
// change), 2 on any error, a usage error included, as kubectl diff; the
// status outputs inform and never set it.
//
//	stencil diff -f shop.yaml           # 1: shop would change
//	stencil diff --bundle ./web -l team=a
package diff
