// Package table is what a run measured and the tables it prints: Results
// is filled by the phases as they go (so a run that fails prints what it
// reached, the rest as "-"), and Print writes the scale benchmark's
// tables, the rollout benchmark's when Results.Rollout is set, or the
// versions benchmark's (its figures and its checks) when
// Results.Versions is. Cells are rounded as the docs quote them (10 ms,
// 0.1 MiB, two decimals for a ratio); no line ends in a space.
package table
