// Package cluster holds what stencil's controllers read of the cluster
// itself rather than of a parent: metadata-only watches of cluster objects
// (CRDs, webhook configurations) that feed controllers as sources.
package cluster
