package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForEach(t *testing.T) {
	ctx := context.Background()
	t.Run("every item, never more than the limit at once", func(t *testing.T) {
		var running, most, done atomic.Int32
		err := ForEach(ctx, 3, 20, func(context.Context, int) error {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			running.Add(-1)
			done.Add(1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if done.Load() != 20 || most.Load() > 3 {
			t.Errorf("done %d (want 20), at most %d at once (want ≤ 3)", done.Load(), most.Load())
		}
	})
	t.Run("the first error, and the items after it skipped", func(t *testing.T) {
		refused := errors.New("refused")
		var started atomic.Int32
		err := ForEach(ctx, 1, 10, func(_ context.Context, i int) error {
			started.Add(1)
			if i == 2 {
				return refused
			}
			return nil
		})
		if !errors.Is(err, refused) {
			t.Errorf("err = %v, want %v", err, refused)
		}
		if started.Load() != 3 {
			t.Errorf("%d items started, want 3 (one at a time, stopping at the error)", started.Load())
		}
	})
}
