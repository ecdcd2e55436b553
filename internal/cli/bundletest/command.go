package bundletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/flags"
)

// options are the flags of `stencil test`.
type options struct {
	updateSnapshots bool
	junit           string
	render          flags.Render
}

// NewCommand returns `stencil test`.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "test [DIR ...]",
		Short: "Run a bundle's test cases (tests/*.yaml): render offline and check assertions",
		Long: `test runs the cases of each bundle folder (the current folder by
default): every YAML file directly in its tests/ folder holds cases, each
a render of the bundle with values, a parent, capabilities, lookups and
observed members of its own, and assertions about the objects the
controller would apply: exists, absent, equal, match (a field path), cel
(an expression over the objects), snapshot (a file of __snapshot__/
beside the case file, compared byte for byte), or fails (the render's
error). Renders are made offline by the controller's own planning, in the
same sandbox and under the same --render-* limits as stencil render.

It prints a line per case, each failure with the assertion, the object
and the field path, expected and got, then a summary. The exit status is
1 when any case fails or a case file is bad (every problem is named by
its file and field). --update-snapshots writes the snapshots that differ
instead of failing them; --junit FILE writes JUnit XML for CI.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			return o.run(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&o.updateSnapshots, "update-snapshots", false, "write every snapshot the render differs from (or that is missing) instead of failing")
	cmd.Flags().StringVar(&o.junit, "junit", "", "write the results as JUnit XML to FILE")
	o.render.Add(cmd.Flags())
	return cmd
}

func (o *options) run(ctx context.Context, dirs []string, stdout, stderr io.Writer) error {
	// Every case file is checked before any case runs.
	var loaded []*Cases
	var errs []error
	for _, dir := range dirs {
		cs, err := Load(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		loaded = append(loaded, cs)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	pool, err := o.render.Pool()
	if err != nil {
		return err
	}
	defer pool.Close()
	r := &Runner{Renderer: pool, UpdateSnapshots: o.updateSnapshots, Out: stdout, Notes: stderr}
	var results []Bundle
	for _, cs := range loaded {
		results = append(results, r.Run(ctx, cs))
	}
	passed, failed := Counts(results)
	fmt.Fprintf(stdout, "%s: %d passed, %d failed\n", plural(passed+failed, "case"), passed, failed)
	if o.junit != "" {
		var b bytes.Buffer
		if err := WriteJUnit(&b, results); err != nil {
			return err
		}
		if err := os.WriteFile(o.junit, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if failed > 0 {
		return &exit.Error{Code: 1, Err: fmt.Errorf("%d of %s failed", failed, plural(passed+failed, "case"))}
	}
	return nil
}
