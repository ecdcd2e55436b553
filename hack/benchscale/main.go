package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/rollout"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/scale"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/versions"
)

func main() {
	var o options.Options
	// A flag set of its own: controller-runtime registers -kubeconfig on
	// the default one.
	flags := flag.NewFlagSet("benchscale", flag.ExitOnError)
	o.Register(flags)
	_ = flags.Parse(os.Args[1:])
	if err := o.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(2)
	}
	// The harness's own informers log through controller-runtime; their
	// chatter is not the benchmark's.
	log.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o)
	if res != nil {
		res.Print(os.Stdout, o, runtime.NumCPU())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

// run runs the benchmark o asks for and returns what it measured, so far
// as it got; the local cluster, if it started one, is stopped (unless
// -keep) before it returns.
func run(ctx context.Context, o options.Options) (*table.Results, error) {
	h, closeCluster, err := harness.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeCluster()
	res := &table.Results{Version: h.Version, CountedBy: h.CountedBy}
	start := time.Now()
	switch {
	case o.Rollout:
		err = rollout.Run(ctx, h, res)
	case o.Versions:
		err = versions.Run(ctx, h, res)
	default:
		err = scale.Run(ctx, h, res)
	}
	if h.Audit != nil {
		time.Sleep(time.Second)
		n, cerr := h.Audit.Unselected(h.AuditUser, start, time.Now())
		if cerr != nil {
			return res, errors.Join(err, cerr)
		}
		res.Unselected = &n
	}
	return res, err
}
