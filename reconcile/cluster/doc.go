// Package cluster holds what stencil's controllers read of the cluster
// itself rather than of a parent: metadata-only watches of cluster objects
// (CRDs, webhook configurations) that feed controllers as sources, the
// served APIs (.Capabilities), and APIs, which answers planning's
// questions about kinds from discovery or, offline, the built-in list.
package cluster
