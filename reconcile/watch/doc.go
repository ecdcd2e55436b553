// Package watch keeps a reconciler's watches of member kinds (Watcher):
// one label-selected informer per kind, started only after the access
// check allows the controller to list and watch it, indexed by the
// ApplySet part-of label (IndexPartOf), and waited on at most syncTimeout.
// Members of a synced kind are read from the cache (Reader, List), others
// from the API server, so no read waits on an informer that cannot sync.
package watch
