// Package outputs compiles and evaluates the expressions a Bundle declares
// over its members: status outputs (a parent's status fields computed
// from its members' live objects, as the articles' controllers wrote
// Foo's availableReplicas and CloudManager's phase) and readiness rules
// (a member's own readyWhen in place of kstatus's "Current").
//
// The language is CEL with the Kubernetes libraries, in the environment
// the API server gives CRD validation rules and ValidatingAdmissionPolicy
// (k8s.io/apiserver/pkg/cel/environment): typed, side-effect free,
// deterministic, and bounded in cost per evaluation.
//
// An output's expression sees two variables:
//
//	parent   the parent object (a Composition, or an instance of a published kind)
//	members  a map from each member's id to its live object
//
// A readiness rule's sees self, the member's live object, and parent.
// A member's id is its stencil.dev/id annotation, which a template sets
// (id: "database"), else Kind/name ("StatefulSet/db"); so
// members.database.status.readyReplicas, or
// members["StatefulSet/db"].status.readyReplicas.
//
// Invariants:
//   - Compile refuses, with the declaration's path and the line and
//     column in the expression, an expression that does not parse, uses
//     an undeclared name or function, or whose type is known and is not
//     the declared one: Bundle authors see it at lint and admission.
//   - Evaluate never fails as a whole: an output whose expression fails
//     (a member missing, a field absent, its cost budget spent, a value
//     of another type than declared) is left out of the values and named
//     with the reason in the problems, which the controller reports in a
//     condition.
//   - Evaluation reads only what it is given: no clock, no randomness, no
//     I/O; the same members give the same values.
//   - Each evaluation is bounded by CostLimit (CEL's cost units, as the
//     API server's per-call limit for validation rules) and by the
//     caller's context.
//
// This package is pure: it imports no client. The controller gives it
// the members from its cache.
package outputs
