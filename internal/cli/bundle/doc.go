// Package bundle is `stencil bundle`, the commands of a bundle's author:
//
//   - init (init.go): a new bundle folder, package scaffold's, which
//     passes lint and `stencil test` as made; it overwrites nothing;
//   - pack (pack.go): a bundle folder, or a chart pulled from a registry
//     (package pull), printed as a Bundle manifest holding its files,
//     loaded exactly as the controller loads a Bundle;
//   - lint (lint.go, publish.go): the bundle rendered with its defaults
//     and with each values file (--set over each), every object
//     validated against the cluster's schemas by a server-side dry run,
//     or offline against the built-in kinds'; the CRD of the kind it
//     publishes built and checked as the API server would, its status
//     outputs and rollout gates compiled as admission compiles them;
//     for a kind published in several versions (roundtrip.go), every
//     example (examples/*.yaml of the bundle, the -f instances) and
//     values generated from each version's schema converted to every
//     other served version and back: a field lost or a conversion that
//     fails is a problem naming the version pair and the field, a field
//     kept only in the conversion annotation a warning;
//   - rbac (rbac.go): the ClusterRoles a cluster admin applies for the
//     kind a folder publishes;
//   - schema (schema.go): a values schema inferred from a folder's
//     values.yaml files and the .Values paths its templates read
//     (package templates/schema/infer), printed or written to
//     values.schema.json; lint warns of each path read that neither
//     values.yaml nor the schema declares (lint_values.go).
//
// Invariants: a folder is read through an os.Root (session.LoadFolder),
// so no file outside it is read, even through a link; pack refuses a
// file a Bundle object cannot hold (not UTF-8 text) and names it; lint
// writes nothing, counts no ownership refusal as a problem (its parent
// adopts nothing), prints every problem with its file or field as a
// folder names it (values.schema.yaml, api: in stencil.yaml), and exits
// 1 when there is any.
//
//	stencil bundle pack ./web > web-bundle.yaml
//	stencil bundle lint ./web -f prod.yaml --set replicas=3
//	stencil bundle schema ./web --write
package bundle
