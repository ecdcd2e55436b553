// Package requests counts API requests, by verb and resource ("get
// compositions.stencil.dev"): the controller's, read from the API server's
// JSON audit log (AuditLog, on the server side, one count per audit ID),
// and a client's own, counted as it sends them (Counter, the floor's bare
// client). Counts splits them into reads (get, list, watch) and writes
// (everything else, access reviews included).
package requests
