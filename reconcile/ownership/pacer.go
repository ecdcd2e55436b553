package ownership

import (
	"context"

	"k8s.io/client-go/util/flowcontrol"
)

// burstSeconds is how many seconds' worth of writes a Pacer lets go at
// once.
const burstSeconds = 2

// Pacer returns the wait before a write that only adds an owner
// reference: qps such writes a second over every caller (def when qps is
// zero; nil, no wait, when negative), with a burst of a couple of
// seconds' worth. The wait ends early, with the context's error, when ctx
// is done.
func Pacer(qps, def float32) func(context.Context) error {
	if qps == 0 {
		qps = def
	}
	if qps < 0 {
		return nil
	}
	limiter := flowcontrol.NewTokenBucketRateLimiter(qps, max(int(qps*burstSeconds), 1))
	return limiter.Wait
}
