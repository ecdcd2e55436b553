// Package watch follows objects through informers as the harness times
// them: Follow starts a cache's informers over some kinds and hands every
// added or updated object to an observer; Watcher is the scale
// benchmark's observer, noting when each Composition was first seen Ready
// for its generation, when a Deployment was first seen Current (kstatus)
// with an image, and when a Composition's output took a value. Times are
// taken as the events arrive, so they are what a client watching the API
// server sees.
//
// Waiting on what a watch has seen goes through wait.Changes: the observer
// notifies, the harness's condition is looked at again.
package watch
