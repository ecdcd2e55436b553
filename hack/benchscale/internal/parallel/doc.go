// Package parallel runs the harness's fan-outs: n items, at most a limit
// at once, the first error stopping what has not started. The floor's
// client works on sets and objects this way, as the controller does;
// creates and deletes of many objects go the same way.
package parallel
