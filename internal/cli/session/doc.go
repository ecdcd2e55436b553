// Package session is what a command knows of the cluster and how it
// renders a parent with it, as the controller would. A Session is made
// by Connect (a client, discovery and a discovery-backed RESTMapper on
// the kubeconfig flags' cluster, which must answer within 10 s) or
// Offline (no cluster: Kubernetes' built-in kinds and stencil's own).
//
// Responsibilities:
//   - session.go: the Session, .Capabilities (discovered once per
//     Session) and the render input (RenderInput: the live parent's UID
//     and install or upgrade online, a first install offline);
//   - bundle.go: the Bundle a command renders (LoadBundle: a folder read
//     through an os.Root, a Bundle manifest, a chart pulled as package
//     pull pulls it, or the cluster's Bundle) and its default name;
//   - resolve.go: which Bundle a -f document renders (Resolve: a
//     Composition's by spec.bundle, an instance's by the kind it
//     publishes) and the adoption consent a dry run is made with
//     (Consent);
//   - versions.go: an instance written in another version than the
//     api's render version, converted to it with the Bundle's own rules
//     as the API server converts it (ToRenderVersion), so render and
//     diff show what the controller will do;
//   - plan.go: the plan of one parent (Plan, PlanObserved), made by
//     package reconcile/plan exactly as the controller makes it;
//   - live.go: what a render reads live, as the user: the generated
//     values the controller keeps (Kept), the set's record of members
//     (RecordOf), lookups (Answer) and observed members (Observe);
//   - fixture.go: what an offline session answers in place of a cluster
//     when given a Fixture (UseFixture: `stencil test`'s cases), its
//     capabilities, lookups, observed members and upgrade.
//
// Invariants: every read is made as the user, never as the controller,
// so a render shows what the user may read; what the user may not read
// (a parent, a store of generated values, the controller's key) is left
// out, and Notes says so for the controller's key, whose absence makes
// generated values show as new ones. Offline nothing is read: lookups are empty, no member is
// observed, and the render is the controller's first install, unless a
// Fixture says otherwise.
//
//	s, err := session.Connect(kube)
//	parent, b, err := s.Resolve(ctx, "", doc)
//	pl, err := s.Plan(ctx, pool, b, parent)
package session
