// Package wait is benchscale's one wait loop: a condition checked until
// it holds, fails, or a timeout passes, looked at again on a clock and,
// for a watch, on every change the watch reports.
//
// Poll checks every 100ms (a condition that reads the API server);
// Changes.Until checks on every change a watch notifies and at least every
// second (a condition over what the watch has seen). Both check once more
// when the timeout passes, and end early with the context's error.
//
//	changes := wait.NewChanges()
//	// in the informer's handler, after recording the event:
//	changes.Notify()
//	// in the harness:
//	err := changes.Until(ctx, time.Minute, "every Composition Ready", func() bool { return ready() == n })
package wait
