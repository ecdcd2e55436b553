package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFairQueueTurns: a freed slot goes to the tenant whose turn it is,
// round-robin over the tenants with waiting renders, oldest render first
// within a tenant. Each step is a render that starts waiting ("a1": tenant
// a's render 1) or a slot freed ("+"); got is the renders in the order they
// were given a slot.
func TestFairQueueTurns(t *testing.T) {
	tests := []struct {
		name  string
		steps string
		want  string
	}{
		{"one tenant in order of arrival", "a1 a2 a3 + + +", "a1 a2 a3"},
		{"round-robin", "a1 a2 a3 b1 c1 + + + + +", "a1 b1 c1 a2 a3"},
		{"a newcomer waits for one render of the burst", "a1 a2 a3 a4 + b1 + + + +", "a1 a2 b1 a3 a4"},
		{"a newcomer waits for one render of each waiting tenant", "a1 a2 b1 b2 + c1 + + + +", "a1 b1 a2 c1 b2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFairQueue(1, 0)
			if err := q.acquire(context.Background(), "held"); err != nil {
				t.Fatal(err)
			}
			granted := make(chan string)
			var got []string
			for _, step := range strings.Fields(tt.steps) {
				if step == "+" {
					q.release()
					got = append(got, <-granted)
					continue
				}
				n := q.len()
				go func() {
					if err := q.acquire(context.Background(), step[:1]); err != nil {
						t.Error(err)
					}
					granted <- step
				}()
				for q.len() == n { // the render has started waiting
					time.Sleep(time.Millisecond)
				}
			}
			if d := cmp.Diff(strings.Fields(tt.want), got); d != "" {
				t.Errorf("renders given a slot (-want +got):\n%s", d)
			}
		})
	}
}

// TestFairQueueForgets: a render that leaves (its context ended, or it was
// given a slot) takes its tenant out of the queue with it when it was the
// tenant's last; nothing stays behind.
func TestFairQueueForgets(t *testing.T) {
	q := newFairQueue(1, 2)
	if err := q.acquire(context.Background(), "held"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error)
	for _, tenant := range []string{"a", "b"} {
		go func() { left <- q.acquire(ctx, tenant) }()
	}
	for q.len() < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := q.acquire(context.Background(), "c"); !errors.Is(err, ErrBusy) {
		t.Fatalf("third waiting render: %v, want ErrBusy", err)
	}
	cancel()
	for range 2 {
		if err := <-left; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled render: %v", err)
		}
	}
	q.release()
	if q.len() != 0 || q.turns.Len() != 0 || len(q.tenants) != 0 || q.free != 1 {
		t.Fatalf("queue after everyone left: %d waiting, %d turns, %d tenants, %d free", q.len(), q.turns.Len(), len(q.tenants), q.free)
	}
}
