// Package migrate is `stencil migrate`: it rewrites, in place, the YAML
// files of a GitOps repository for a Bundle that changed its API or its
// values schema, so that what Git holds is what the cluster now speaks.
//
// It owns two rewrites, each per YAML document:
//
//   - an instance of the kind the Bundle publishes, written in a version
//     other than the target (--to, else the Bundle's render version), is
//     converted with the Bundle's own conversion rules, the very
//     converter the API server's conversion webhook runs (package
//     publish/conversion), so the file says what the API server would
//     answer for it in the target version;
//   - a Composition naming the Bundle whose values the Bundle's current
//     schema refuses gets its spec.values migrated with the Bundle's
//     valuesMigrations, in order, until the schema accepts them, as the
//     controller migrates them at render time.
//
// Invariants: files are edited with kyaml (sigs.k8s.io/kustomize/kyaml):
// only the nodes whose value changes are replaced, so comments, key order,
// quoting and styles of everything else are kept; a renamed field keeps
// its place and comments; the documents of a file that need no change are
// written back byte for byte, and a file with no change is not written at
// all. Every file is read, parsed and planned before the first write: a
// file that does not parse (named with its line), an instance in a version
// the Bundle does not serve, a failed conversion or values the migrations
// cannot make acceptable is an error, and then nothing is written
// anywhere. With --check nothing is ever written and the exit status is 1
// when something would change (for CI).
//
// The Bundle comes from a folder or a Bundle manifest (--bundle DIR|FILE,
// read as session.LoadBundle reads it), or from the cluster by name, read
// with the caller's own kubeconfig identity: migrate never writes to the
// cluster.
//
//	stencil migrate -f gitops/ -R --bundle appservice --check
//	stencil migrate -f gitops/team-a --bundle ./bundles/appservice --to v2
package migrate
