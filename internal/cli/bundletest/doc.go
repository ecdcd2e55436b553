// Package bundletest is `stencil test`: a bundle's test cases, each a
// render of the bundle checked by assertions, run offline with the
// controller's own planning (package internal/cli/session, as `stencil
// render --offline`), in the render sandbox.
//
// Responsibilities:
//   - case.go: the case file format (File, Case, Parent, Capabilities,
//     Assertion and its kinds), the documented contract;
//   - load.go, fixture.go: reading a bundle's tests/*.yaml strictly and
//     checking every case before any runs (Load): a problem is a
//     *FileError naming the file and the field, such as
//     cases[0].assert[1].equal.path; the parent, values, capabilities,
//     lookups and observed members become a session.Fixture;
//   - run.go: rendering each case (Runner.Run) and printing a line per
//     case, each failure with its assertion, object, path, expected and
//     got;
//   - assert.go, path.go, cel.go, snapshot.go: the assertions;
//   - junit.go: the results as JUnit XML (WriteJUnit), for CI;
//   - command.go: the command and its flags.
//
// Field paths (equal, match) are stencil's own, the notation `stencil
// diff` and the dry-run warnings print: names separated by dots, each
// followed by brackets, [N] for a list index, [key=value] for the first
// item of a list whose field key is value (containers[name=web]), and
// ["key"] for a key holding dots (metadata.annotations["stencil.dev/id"]).
//
// Invariants: a case file is decoded strictly (an unknown field, a
// duplicate key or a value of the wrong type is a problem naming its
// field); nothing is read but the bundle folder and the case files'
// values files; nothing reaches a cluster; snapshot files are written
// only with --update-snapshots, and only when they differ; CEL
// assertions are bounded in cost as status outputs are.
//
// A case file, tests/defaults.yaml:
//
//	cases:
//	- name: three replicas
//	  values: {replicaCount: 3}
//	  assert:
//	  - equal: {kind: Deployment, path: spec.replicas, value: 3}
//	  - match: {kind: Deployment, path: "spec.template.spec.containers[0].image", regex: '^nginx:'}
//	  - cel: {expression: "objects.all(o, o.metadata.namespace == 'default')"}
//	  - snapshot: {}
//
// The format in full is in docs/testing-bundles.md.
package bundletest
