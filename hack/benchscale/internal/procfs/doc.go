// Package procfs reads what Linux's /proc says of a process: its CPU
// time (/proc/PID/stat), its resident memory (/proc/PID/status, and
// smaps_rollup's Pss) and its child processes. The harness reads the
// controller, its render workers and the local cluster's processes
// through it; nothing here starts or stops a process.
//
// Sizes are in KiB, as the kernel gives them; CPU time is user plus
// system time.
package procfs
