// Package exit is the exit status of stencil's commands: Error carries a
// status other than 1 out of a command's RunE (diff exits 1 when there
// are differences and 2 on errors, as kubectl diff does; bundle lint
// exits 1 when it finds problems), and Code reads the status back from
// the error a command returned.
//
// Invariants: no error is status 0, any error that is not an Error is
// status 1, and an Error whose Err is nil has nothing to print (main
// prints no "error:" line for it).
//
//	return &exit.Error{Code: 2, Err: err} // exit.Code(err) == 2
package exit
