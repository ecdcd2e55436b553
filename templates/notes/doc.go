// Package notes owns a chart's NOTES.txt as Helm v4 reads it: which
// files of templates/ are notes, which one is the release's, and the
// bounded form a parent's status records.
//
// Helm's engine executes every file of templates/ but the partials, a
// NOTES.txt too, so a fail or a required in one fails the render
// (helm.sh/helm/v4 pkg/engine). Helm's install then takes out every file
// whose name ends in NOTES.txt (IsNotes), so none is parsed as objects,
// and keeps the root chart's templates/NOTES.txt (RootFile) as the
// release's notes; a subchart's is executed, and its text dropped
// (pkg/action's renderResources, without --render-subchart-notes).
//
// # Invariants
//
//   - A NOTES.txt is never an object: it is executed, its errors are the
//     render's, its text is Notes.Text (the root's) or nothing.
//   - Status never holds what a render read of the cluster or generated:
//     Status shows no text of a render Notes.Sensitive marks (one that
//     looked up objects, read observed values or called a generator,
//     whose text may hold them), only a line saying where to read it.
//   - Status is at most MaxStatusBytes, cut at a line or rune with a
//     marker that says how long the notes were.
//
// # Example
//
//	if notes.IsNotes(file) { /* executed, never parsed as objects */ }
//	st.Notes = notes.Status(rendered) // "" when the chart has none
package notes
