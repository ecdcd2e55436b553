// Package fault owns RenderError, the one error type of loading and
// rendering a bundle, and the reasons a render is stopped for. Every
// package of the engine returns it; package templates hands it on as
// templates.RenderError.
//
// # Invariants
//
//   - An error names where it happened: the bundle file and line (File,
//     Line), or the values field path (Path).
//   - Msg never quotes a value of the bundle, the values or a Secret.
//   - Reason is ReasonTimeout, ReasonTooLarge or "" (a mistake in the
//     bundle or values); status conditions report it as it is.
//
// # Example
//
//	return &fault.RenderError{File: "templates/cm.yaml", Line: 3,
//		Reason: fault.ReasonTooLarge, Msg: "the output passes MaxOutputBytes"}
package fault
