package profile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestProfilerMergesWindows: the windows a profiler fetched until it was
// stopped become one profile; a window that cannot be fetched is the
// recording's error.
func TestProfilerMergesWindows(t *testing.T) {
	ctx := context.Background()
	var windows atomic.Int32
	fetch := func(ctx context.Context, w io.Writer) error {
		time.Sleep(20 * time.Millisecond)
		windows.Add(1)
		return pprof.Lookup("goroutine").WriteTo(w, 0)
	}
	p, err := Start(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	// The profiler goes on to the next window, for as long as it runs:
	// stopped once it fetched two (however long they took), its profile
	// is their merge.
	testenv.Eventually(t, 0, "the profiler to fetch two windows", func() (bool, error) {
		return windows.Load() >= 2, fmt.Errorf("%d windows", windows.Load())
	})
	out := filepath.Join(t.TempDir(), "merged.pprof")
	if err := p.Stop(ctx, out); err != nil {
		t.Fatal(err)
	}
	merged, err := os.ReadFile(out)
	if err != nil || len(merged) == 0 {
		t.Fatalf("merged profile: %d bytes, %v", len(merged), err)
	}
	if !bytes.HasPrefix(merged, []byte{0x1f, 0x8b}) {
		t.Errorf("the merged profile is not a gzipped profile: starts %x", merged[:min(len(merged), 4)])
	}

	failing, err := Start(ctx, func(context.Context, io.Writer) error { return errors.New("refused") })
	if err != nil {
		t.Fatal(err)
	}
	if err := failing.Stop(ctx, filepath.Join(t.TempDir(), "none.pprof")); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a window that cannot be fetched: got %v, want its error", err)
	}
}
