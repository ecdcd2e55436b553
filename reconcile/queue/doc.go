// Package queue gives stencil's controllers a work queue that takes turns
// by tenant.
//
// A controller's work queue is first come, first served: one tenant that
// creates or changes fifty parents at once puts fifty requests ahead of
// another tenant's one, and that one waits for all fifty passes (each a
// render in a worker process). The render pool already takes turns by
// tenant (internal/sandbox), but a request that waits in the work queue
// never reaches it.
//
// New builds client-go's rate-limiting work queue (its de-duplication,
// processing set, delays, rate limits, shutdown and metrics unchanged)
// over Turns, an ordering that keeps one first-in, first-out line per
// tenant and hands out the head of each line in turn.
//
// Invariants:
//   - A request of tenant B that arrives while other tenants have
//     requests waiting is handed out after at most one request of each of
//     those tenants.
//   - Within one tenant, requests keep their order of arrival.
//   - Memory is one entry per waiting request and one per tenant with a
//     waiting request: a tenant is forgotten when its line empties.
//
// The Composition controller and each published kind's controller use
// New with the parent's namespace as the tenant:
//
//	controller.Options{NewQueue: queue.ByNamespace}
package queue
