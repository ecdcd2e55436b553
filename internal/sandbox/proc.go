package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stencil-dev/stencil/templates"
)

// proc is one worker process, used by one render at a time.
type proc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	stderr *head
	frames chan *response // closed when the worker's output ends
	// readErr is why frames was closed; read it only after frames is closed.
	readErr error
	exited  chan struct{} // closed when the process has been waited for
	known   map[string]bool
	where   location // where the render was, from the last progress note
	once    sync.Once
	// isolation is what confines the worker, from its first message;
	// fresh says that the pool has not seen it yet.
	isolation *Isolation
	fresh     bool
}

// hello returns what confines the worker the first time it is called
// after the worker said it, and nil after.
func (w *proc) hello() *Isolation {
	if !w.fresh {
		return nil
	}
	w.fresh = false
	return w.isolation
}

// start starts a worker process.
func start(command []string, memory int64) (*proc, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = []string{
		EnvWorker + "=1",
		EnvMemory + "=" + strconv.FormatInt(memory, 10),
		// One core at most, and only the runtime's one-line fatal error.
		"GOMAXPROCS=1", "GOTRACEBACK=none",
	}
	cmd.Dir = "/"
	cmd.SysProcAttr = sysProcAttr()
	w := &proc{cmd: cmd, stderr: &head{max: 8192}, frames: make(chan *response, 1), exited: make(chan struct{}), known: map[string]bool{}}
	cmd.Stderr = w.stderr
	var err error
	if w.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start render worker: %w", err)
	}
	go w.read(bufio.NewReader(out))
	return w, nil
}

// read forwards the worker's messages until its output ends, then waits
// for the process.
func (w *proc) read(r io.Reader) {
	for {
		f := &response{}
		err := readFrame(r, f)
		if err == nil && f.ObjectsFollow {
			f.objects, err = readRaw(r)
		}
		if err != nil {
			w.readErr = err
			close(w.frames)
			break
		}
		w.frames <- f
	}
	_ = w.cmd.Wait()
	close(w.exited)
}

// errSendTimeout says that a worker did not read a request within its
// time: it was killed.
var errSendTimeout = errors.New("render worker did not read its request in time")

// sendWithin writes req to the worker, and kills the worker if the write
// has not finished within d: a worker that stops reading (wedged, or not
// a worker at all) must not hold its caller, or the pool's slot, past the
// render's deadline once the request outgrows the pipe's buffer.
func (w *proc) sendWithin(req *request, d time.Duration) error {
	timer := time.AfterFunc(d, w.kill)
	err := writeFrame(w.in, req)
	if !timer.Stop() {
		return errSendTimeout
	}
	return err
}

// kill stops the worker and waits for it.
func (w *proc) kill() {
	w.once.Do(func() {
		_ = w.in.Close()
		_ = w.cmd.Process.Kill()
		go func() {
			for range w.frames { //nolint:revive // drain so read can finish
			}
		}()
		<-w.exited
	})
}

// died explains a worker whose output ended before it answered: it ran out
// of memory or stack (the bundle's fault: a RenderError), or it failed for
// another reason.
func (w *proc) died(err error, l Limits) error {
	w.kill()
	stderr := w.stderr.String()
	fatal := fatalLine(stderr)
	switch {
	case strings.Contains(fatal, "out of memory") || strings.Contains(fatal, "cannot allocate memory"):
		return &templates.RenderError{File: w.where.File, Line: w.where.Line, Reason: templates.ReasonTooLarge,
			Msg: fmt.Sprintf("render stopped: it used more than %s of memory", formatBytes(uint64(l.Memory)))}
	case strings.Contains(fatal, "stack overflow") || strings.Contains(stderr, "stack exceeds"):
		return &templates.RenderError{File: w.where.File, Line: w.where.Line, Reason: templates.ReasonTooLarge,
			Msg: "render stopped: it nested too deeply (stack overflow)"}
	case fatal != "":
		return &templates.RenderError{File: w.where.File, Line: w.where.Line, Msg: "render worker failed: " + fatal}
	}
	code := -1
	if w.cmd.ProcessState != nil {
		code = w.cmd.ProcessState.ExitCode()
	}
	return fmt.Errorf("render worker exited (code %d) before answering: %v", code, err)
}

// fatalLine returns the runtime's "fatal error: ..." line, which holds no
// data of the render, or "".
func fatalLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "fatal error: ") {
			return strings.TrimPrefix(l, "fatal error: ")
		}
	}
	return ""
}

// head keeps the first max bytes written to it: a dying Go runtime prints
// its "fatal error:" line first, then every goroutine's stack.
type head struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *head) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *head) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
