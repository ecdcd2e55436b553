// Package controller runs `stencil controller` as the benchmark measures
// it: a process of its own (Start, Process.Stop), with its metrics and
// health probes on loopback, read as it works: its metrics (Scrape, Idle:
// no reconcile queued or in progress), its CPU time and its resident
// memory and its render workers' (CPU, Memory, from /proc).
//
// Every run gets the same flags (Args): plain-HTTP metrics (an
// authenticated scrape would add requests the benchmark counts), writes
// as the controller's own identity, and the concurrency and client rate
// limits the floor's bare client uses too.
package controller
