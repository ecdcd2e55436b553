package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates"
)

// flags are migrate's flags.
type flags struct {
	files     []string
	recursive bool
	bundle    string
	to        string
	check     bool
}

// NewCommand returns `stencil migrate`, with the kubeconfig flags kube
// (the cluster a --bundle NAME is read from).
func NewCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "migrate -f DIR|FILE [-R] --bundle DIR|FILE|NAME [--to VERSION] [--check]",
		Short: "Rewrite a GitOps repository's instances and Compositions for a Bundle's new version or values schema",
		Long: `migrate rewrites, in place, the YAML files of -f (a file, or a folder's
*.yaml and *.yml files; -R walks its subfolders too):

  - every instance of the kind the Bundle publishes that is written in
    another version is converted to --to (default: the Bundle's render
    version, the storage version unless api.renderVersion names another)
    with the Bundle's own conversion rules, as the API server's
    conversion webhook converts it;
  - every Composition naming the Bundle whose values the Bundle's
    schema refuses gets its spec.values migrated with the Bundle's
    valuesMigrations, in order, until the schema accepts them, as the
    controller migrates them at render time.

Only what changes is rewritten: comments, key order, quoting and the
formatting of everything else are kept, the other documents of a file
are left byte for byte, and a file with no change is not written. Each
change is printed: file, object, from → to, and the fields moved,
changed, added and removed. Every file is checked before any is written:
a file that does not parse, an instance in a version the Bundle does not
serve, or values no migration makes acceptable is an error and nothing
is written. --check writes nothing and exits 1 when something would
change (for CI), 0 otherwise, and 2 on an error.

--bundle is a bundle folder or a Bundle manifest, or else the name of a
Bundle in the cluster, read with your kubeconfig's identity; migrate
never writes to the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), kube, f, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "a YAML file or a folder of them to migrate (repeatable)")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "walk the folders of -f and their subfolders")
	cmd.Flags().StringVar(&f.bundle, "bundle", "", "the Bundle: a bundle folder, a Bundle manifest, or the name of a Bundle in the cluster")
	cmd.Flags().StringVar(&f.to, "to", "", "the version to rewrite instances in (default: the Bundle's render version)")
	cmd.Flags().BoolVar(&f.check, "check", false, "write nothing; exit 1 when something would change")
	return cmd
}

// run migrates the files of f.
func run(ctx context.Context, kube *genericclioptions.ConfigFlags, f *flags, out io.Writer) error {
	if len(f.files) == 0 || f.bundle == "" {
		return fmt.Errorf("give -f with the files or folders to migrate and --bundle with the Bundle they use")
	}
	b, err := loadBundle(ctx, kube, f.bundle)
	if err != nil {
		return err
	}
	t, err := NewTarget(b, f.to)
	if err != nil {
		return err
	}
	changes, err := Run(f.files, f.recursive, t, f.check)
	for _, c := range changes {
		fmt.Fprintln(out, c)
	}
	if err != nil && f.check {
		// 1 means "something would change": an error is 2, as diff's.
		return &exit.Error{Code: 2, Err: err}
	}
	if err != nil {
		return err
	}
	switch {
	case f.check && len(changes) > 0:
		return &exit.Error{Code: 1, Err: fmt.Errorf("%d document(s) would change (stencil migrate without --check rewrites them)", len(changes))}
	case len(changes) == 0:
		fmt.Fprintln(out, "nothing to migrate")
	}
	return nil
}

// loadBundle loads --bundle: a folder or manifest when from names one,
// else the cluster's Bundle of that name, read as the caller.
func loadBundle(ctx context.Context, kube *genericclioptions.ConfigFlags, from string) (*templates.Bundle, error) {
	if _, err := os.Stat(from); err == nil {
		name, err := session.BundleNameAt(from)
		if err != nil {
			return nil, err
		}
		s, err := session.Offline(kube)
		if err != nil {
			return nil, err
		}
		return s.LoadBundle(ctx, from, name)
	}
	if strings.ContainsAny(from, `/\`) {
		return nil, fmt.Errorf("--bundle %s: no such folder or file", from)
	}
	s, err := session.Connect(kube)
	if err != nil {
		return nil, fmt.Errorf("--bundle %s is no folder or file here, and the cluster to read Bundle %s from: %w", from, from, err)
	}
	return s.LoadBundle(ctx, "", from)
}

// Run plans the migration of every YAML file of paths (folders walked
// when recursive, else their files only) for t, then, unless check is
// set and when every file planned without error, writes the files that
// change. It returns the changes, in file and document order; with an
// error, nothing was written.
func Run(paths []string, recursive bool, t *Target, check bool) ([]Change, error) {
	names, err := yamlFiles(paths, recursive)
	if err != nil {
		return nil, err
	}
	var (
		changes []Change
		files   []*file
		errs    []error
	)
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f, err := parseFile(name, data)
		if err == nil {
			var cs []Change
			if cs, err = planFile(f, t); err == nil {
				changes = append(changes, cs...)
				files = append(files, f)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return changes, fmt.Errorf("nothing written: %w", errors.Join(errs...))
	}
	if check {
		return changes, nil
	}
	return changes, write(files)
}

// write writes the files that changed, each through a temporary file
// renamed over it, so that a file is never left half written.
func write(files []*file) error {
	for _, f := range files {
		if !f.changed() {
			continue
		}
		info, err := os.Stat(f.path)
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".migrate-*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(f.bytes())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(tmp.Name(), info.Mode().Perm())
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.path)
		}
		if err != nil {
			_ = os.Remove(tmp.Name()) // best effort: the error returned is what matters
			return fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return nil
}

// yamlFiles lists the files of paths: a file as it is, a folder's *.yaml
// and *.yml files (and its subfolders' when recursive), sorted.
func yamlFiles(paths []string, recursive bool) ([]string, error) {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (!recursive || strings.HasPrefix(d.Name(), ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := filepath.Ext(path); d.Type().IsRegular() && (ext == ".yaml" || ext == ".yml") {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
