// Package preview shows what a server-side dry run of a parent's children
// says would change, the same way for diff -f and for the blast radius of
// a Bundle change (diff --bundle): UnifiedDiff writes a child's live and
// would-be objects as a unified diff, and Outputs the parent's status
// outputs the would-be members would change (status.outputs.phase
// "creating" → "ready").
//
// It reads nothing: what it shows comes from the applyset.Preview values
// of a dry run (applyset.DryRun) and the parent's status as the caller
// read it.
//
// Invariants: what the server keeps for itself (managedFields,
// resourceVersion, ...) never shows (applyset.CleanForDiff, as the
// admission webhook's summary cleans it), nor does a Secret's value: its
// data and stringData show as "***", "*** (before)" and "*** (after)";
// an output the dry run cannot compute is left out, and the outputs come
// sorted by name.
//
//	text, err := preview.UnifiedDiff(pv) // "" when unchanged
package preview
