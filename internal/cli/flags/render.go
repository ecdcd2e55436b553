package flags

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stencil-dev/stencil/internal/sandbox"
)

// Render are the limits of every render a command makes: the same
// flags, defaults and sandbox in the controller, render, diff and lint.
type Render struct {
	timeout   time.Duration
	memory    string
	isolation string
}

// Add adds --render-timeout, --render-memory and --render-isolation to fs.
func (f *Render) Add(fs *pflag.FlagSet) {
	fs.DurationVar(&f.timeout, "render-timeout", sandbox.DefaultTimeout, "the most time one render may take; a render past it is stopped (reason RenderTimeout)")
	fs.StringVar(&f.memory, "render-memory", "512Mi", "the most memory one render may use, as a quantity (512Mi, 1Gi); a render past it is stopped (reason RenderTooLarge)")
	fs.StringVar(&f.isolation, "render-isolation", "", "strict: refuse to render where render workers cannot confine themselves (Landlock, seccomp); best-effort: warn once and render (default: strict for the controller and blast, best-effort for render, diff and lint)")
}

// Limits parses the flags.
func (f *Render) Limits() (sandbox.Limits, error) {
	q, err := resource.ParseQuantity(f.memory)
	if err != nil || q.Value() <= 0 {
		return sandbox.Limits{}, fmt.Errorf("--render-memory %q: want a positive quantity such as 512Mi", f.memory)
	}
	if f.timeout <= 0 {
		return sandbox.Limits{}, fmt.Errorf("--render-timeout %s: want a positive duration such as 10s", f.timeout)
	}
	mode := sandbox.IsolationStrict
	if f.isolation != "" {
		if mode, err = sandbox.ParseIsolationMode(f.isolation); err != nil {
			return sandbox.Limits{}, err
		}
	}
	return sandbox.Limits{Timeout: f.timeout, Memory: q.Value(), Isolation: mode}, nil
}

// Pool starts the pool of render workers of a command that renders one
// Composition at a time; the caller closes it.
func (f *Render) Pool() (*sandbox.Pool, error) {
	l, err := f.Limits()
	if err != nil {
		return nil, err
	}
	if f.isolation == "" { // a user rendering their own files, maybe off Linux
		l.Isolation = sandbox.IsolationBestEffort
	}
	return sandbox.New(sandbox.Options{Limits: l, Workers: 1})
}
