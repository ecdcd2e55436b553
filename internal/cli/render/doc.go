// Package render is `stencil render`: it prints, as multi-document YAML,
// exactly the objects the controller would apply for each Composition
// and instance of a published kind of -f (or, without -f, for the one
// Composition --bundle, --values, --set and --name make, as helm template
// makes a release): same order, same namespace placement, same ApplySet
// part-of label, rendered by package session as the controller renders.
//
// Invariants: render never writes to the cluster; online its reads are
// made as the user, offline (--offline, or a --bundle with no reachable
// cluster, with a note) it shows the controller's first install, and the
// objects held back until a member's value is observed are named on
// stderr, not printed; the Secrets keeping generated values are not
// printed (only applied); the chart's crds/ CRDs are printed first only
// with --include-crds.
//
//	stencil render -f shop.yaml | kubectl apply --server-side --dry-run=server -f -
//	stencil render --bundle ./web --set replicas=3 --name web -n team-a
package render
