package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Window is one window's length; the last window ends at most this long
// after the phase.
const Window = 2 * time.Second

// Fetcher GETs one window of a CPU profile into w.
type Fetcher func(ctx context.Context, w io.Writer) error

// Profiler records a process's CPU profile over a phase.
type Profiler struct {
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// Start starts recording the CPU profile fetch reads.
func Start(ctx context.Context, fetch Fetcher) (*Profiler, error) {
	dir, err := os.MkdirTemp("", "benchscale-cpu-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Profiler{dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() {
		// At least one window, however short the phase. A window runs to
		// its end even once the phase is over, so that it is a whole
		// profile: the request has its own context.
		var err error
		for i := 0; ; i++ {
			if err = saveWindow(context.WithoutCancel(ctx), fetch, filepath.Join(dir, fmt.Sprintf("%04d.pprof", i))); err != nil || ctx.Err() != nil {
				break
			}
		}
		c.done <- err
	}()
	return c, nil
}

// saveWindow writes one window of a CPU profile to path.
func saveWindow(ctx context.Context, fetch Fetcher, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fetch(ctx, f); err != nil {
		_ = f.Close() // the window is lost either way; the fetch's error is the one to report
		return err
	}
	return f.Close()
}

// Stop ends the recording after the current window and writes the merged
// profile to path. A window that could not be fetched is its error.
func (c *Profiler) Stop(ctx context.Context, path string) error {
	// The windows' temporary directory: one left behind holds nothing the
	// run needs, and the merged profile's error matters more.
	defer func() { _ = os.RemoveAll(c.dir) }()
	c.cancel()
	if err := <-c.done; err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(c.dir, "*.pprof"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("no CPU profile recorded")
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, files...)...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		_ = out.Close() // the merge failed; its error is the one to report
		return fmt.Errorf("merge %d CPU profiles: %w", len(files), err)
	}
	return out.Close()
}

// Controller fetches the CPU profile the controller serves on addr
// (--pprof-bind-address).
func Controller(addr string) Fetcher {
	u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(Window/time.Second))
	return func(ctx context.Context, w io.Writer) error { return getTo(ctx, http.DefaultClient, u, w) }
}

// APIServer fetches kube-apiserver's CPU profile (its
// /debug/pprof/profile, on while --profiling is, the default) as the
// user of cfg.
func APIServer(cfg *rest.Config) (Fetcher, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// A window takes Window to answer: past client-go's timeout, if one
	// is set.
	hc.Timeout = 0
	u := strings.TrimRight(cfg.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(Window/time.Second))
	return func(ctx context.Context, w io.Writer) error { return getTo(ctx, hc, u, w) }, nil
}

// SaveHeap writes the heap profile the controller serves on addr
// (--pprof-bind-address) to path.
func SaveHeap(ctx context.Context, addr, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := getTo(ctx, http.DefaultClient, "http://"+addr+"/debug/pprof/heap", f); err != nil {
		_ = f.Close() // the profile is lost either way; the GET's error is the one to report
		return err
	}
	return f.Close()
}

// getTo GETs url with hc and copies the answer's body to w; an answer
// other than 200 OK is an error naming the URL's path.
func getTo(ctx context.Context, hc *http.Client, url string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	// Read to the end, or not wanted: closing loses nothing.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
