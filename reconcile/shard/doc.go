// Package shard assigns parents to controllers: the stencil.dev/shard
// label (Label), the selector and cache options of a shard's controller
// (Selector, CacheOptions: only its own Compositions and the ApplySets'
// members enter the cache), and its leader election Lease
// (LeaderElectionID).
package shard
