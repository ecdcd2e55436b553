//go:build tools

// Package tools pins the code generators the Makefile runs with `go run`, so
// their versions come from go.mod and nothing is installed globally.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
