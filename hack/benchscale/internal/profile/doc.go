// Package profile records CPU profiles over phases of unknown length and
// saves heap profiles, from a process's /debug/pprof: the controller's
// (--pprof-bind-address) and kube-apiserver's (read as the admin).
//
// A CPU profile is back-to-back windows of Window each, fetched until the
// phase ends and merged into one profile by `go tool pprof -proto`:
//
//	p, err := profile.Start(ctx, profile.Controller(addr))
//	… the phase …
//	err = p.Stop(ctx, "cold.pprof")
package profile
