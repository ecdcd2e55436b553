package wait

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	ctx := context.Background()
	t.Run("returns once the condition holds", func(t *testing.T) {
		var calls atomic.Int32
		if err := Poll(ctx, time.Hour, func() (bool, error) { return calls.Add(1) == 3, nil }); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 3 {
			t.Errorf("cond called %d times, want 3", calls.Load())
		}
	})
	t.Run("returns the condition's error", func(t *testing.T) {
		refused := errors.New("refused")
		if err := Poll(ctx, time.Hour, func() (bool, error) { return false, refused }); !errors.Is(err, refused) {
			t.Errorf("err = %v, want %v", err, refused)
		}
	})
	t.Run("times out, saying after how long", func(t *testing.T) {
		err := Poll(ctx, 50*time.Millisecond, func() (bool, error) { return false, nil })
		if err == nil || err.Error() != "timed out after 50ms" {
			t.Errorf("err = %v, want the timeout", err)
		}
	})
	t.Run("ends with the context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := Poll(ctx, time.Hour, func() (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

// TestPollEvery: the condition is called at the interval asked for, and
// the timeout names the wait.
func TestPollEvery(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	start := time.Now()
	if err := PollEvery(ctx, 20*time.Millisecond, time.Hour, "three calls", func() (bool, error) { return calls.Add(1) == 3, nil }); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Errorf("three calls took %s, want at least two intervals (40ms)", took)
	}
	err := PollEvery(ctx, 10*time.Millisecond, 30*time.Millisecond, "what never comes", func() (bool, error) { return false, nil })
	if err == nil || err.Error() != "timed out after 30ms waiting for what never comes" {
		t.Errorf("err = %v, want the timeout naming the wait", err)
	}
}

// TestChangesUntil: a notification wakes the wait before its clock would
// (the clock is a second; the test's notifications come sooner).
func TestChangesUntil(t *testing.T) {
	ctx := context.Background()
	c := NewChanges()
	var state atomic.Int32
	go func() {
		for range 3 {
			time.Sleep(10 * time.Millisecond)
			state.Add(1)
			c.Notify()
		}
	}()
	start := time.Now()
	if err := c.Until(ctx, time.Hour, "the state to reach 3", func() bool { return state.Load() == 3 }); err != nil {
		t.Fatal(err)
	}
	t.Logf("woken by notifications after %s", time.Since(start).Round(time.Millisecond))

	c.Notify()
	c.Notify() // coalesced with the one before: Notify never blocks
	err := c.Until(ctx, 20*time.Millisecond, "what never comes", func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "timed out after 20ms waiting for what never comes") {
		t.Errorf("err = %v, want the timeout naming the wait", err)
	}
}
