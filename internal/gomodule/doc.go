// Package gomodule fetches a Go module at a pinned version and copies a
// folder of it where it can be changed: how stencil's tests and
// hack/helmbench get public Helm charts reproducibly.
//
// The Go module proxy serves a repository as a module at a pseudo-version
// of a commit (a repository without a go.mod too), the zip checked
// against the checksum database like any module and cached in
// GOMODCACHE, so a chart fetched once is read offline afterwards.
//
// Invariants: Module.Dir returns a folder only when its go.sum hash is the
// one pinned in the Module (what was tested is what is tested again,
// whatever proxy serves it); the folder is the module cache's, read-only,
// and CopyTree makes a writable copy. The package uses the standard
// library and the go command only, so hack/helmbench (a module of its own
// that must not take envtest's dependencies) imports it as well as
// internal/e2e does.
//
//	m := gomodule.Module{Path: "github.com/bitnami/charts", Version: "v0.0.0-20260907150927-c0703daaf78e", Sum: "h1:68EP…="}
//	src, err := m.Dir()
//	…
//	err = gomodule.CopyTree(filepath.Join(src, "bitnami", "postgresql"), dir)
package gomodule
