package wait

import (
	"context"
	"fmt"
	"time"
)

// Poll calls cond every 100ms until it is true, fails, or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	return loop(ctx, timeout, "", nil, 100*time.Millisecond, cond)
}

// PollEvery calls cond every interval until it is true, fails, or
// timeout passes; what names the wait in the timeout's error. For a
// condition that costs the API server something (a LIST of a thousand
// objects), where Poll's 100ms would be a load of its own.
func PollEvery(ctx context.Context, every, timeout time.Duration, what string, cond func() (bool, error)) error {
	return loop(ctx, timeout, what, nil, every, cond)
}

// Changes is a watch's signal that what it has seen changed: any number
// of notifications between two looks are one.
type Changes struct {
	c chan struct{}
}

// NewChanges returns a Changes nothing has notified yet.
func NewChanges() *Changes {
	return &Changes{c: make(chan struct{}, 1)}
}

// Notify says something changed. It never blocks.
func (c *Changes) Notify() {
	select {
	case c.c <- struct{}{}:
	default:
	}
}

// Until waits until cond holds, checking it at once, on every change and
// at least every second; what names the wait in the timeout's error.
func (c *Changes) Until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	return loop(ctx, timeout, what, c.c, time.Second, func() (bool, error) { return cond(), nil })
}

// loop is the wait: cond now, then again on each wake or every interval,
// and once more when timeout has passed.
func loop(ctx context.Context, timeout time.Duration, what string, wake <-chan struct{}, every time.Duration, cond func() (bool, error)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			if ok, err := cond(); err != nil || ok {
				return err
			}
			if what == "" {
				return fmt.Errorf("timed out after %s", timeout)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-wake:
		case <-time.After(every):
		}
	}
}
