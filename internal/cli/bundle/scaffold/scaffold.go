package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// files are the scaffold's files, each a text/template with [[ ]] as its
// delimiters (the files hold the bundle's own {{ }} templates).
//
//go:embed all:files
var files embed.FS

// DefaultGroup and DefaultVersion are the group and version of a kind
// scaffolded without --group or --version.
const (
	DefaultGroup   = "example.com"
	DefaultVersion = "v1alpha1"
)

// Options say what bundle to scaffold.
type Options struct {
	// Name is the bundle's name: Chart.yaml's, and its helpers' prefix.
	Name string
	// Kind is the kind the bundle publishes; none when empty.
	Kind string
	// Group and Version are the kind's (DefaultGroup and DefaultVersion
	// when empty).
	Group, Version string
}

// data is what the scaffold's templates see.
type data struct {
	Options
	// Plural and Lower are the kind's resource and its lower-case name.
	Plural, Lower string
}

// Check defaults o and says what is wrong with it, naming the option
// (NAME, --kind, --group, --version).
func (o *Options) Check() error {
	var problems []string
	for _, msg := range validation.IsDNS1123Label(o.Name) {
		problems = append(problems, fmt.Sprintf("NAME %q: %s", o.Name, msg))
	}
	if o.Kind == "" {
		if o.Group != "" || o.Version != "" {
			problems = append(problems, "--group and --version are the published kind's: give --kind too")
		}
		return joined(problems)
	}
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	flag := map[string]string{"spec.api.group": "--group", "spec.api.kind": "--kind", "spec.api.version": "--version"}
	for _, e := range publish.Validate(v1alpha1.BundleAPI{Group: o.Group, Kind: o.Kind, Version: o.Version}) {
		name := flag[e.Field]
		if name == "" {
			name = e.Field
		}
		problems = append(problems, fmt.Sprintf("%s: %s", name, e.ErrorBody()))
	}
	if publish.ReservedGroup(o.Group) {
		problems = append(problems, fmt.Sprintf("--group %s is Kubernetes' own (k8s.io, kubernetes.io): stencil makes no CRD there; choose a group of yours", o.Group))
	}
	return joined(problems)
}

func joined(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// Write writes the scaffold of o (checked by Check) into dir, which must
// not exist or be empty: it overwrites nothing. It returns the files
// written, relative to dir, in the order written.
func Write(dir string, o Options) ([]string, error) {
	if err := refuseNonEmpty(dir); err != nil {
		return nil, err
	}
	d := data{Options: o, Lower: strings.ToLower(o.Kind), Plural: publish.Plural(o.Kind)}
	var written []string
	err := fs.WalkDir(files, "files", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(path, "files/")
		content, err := render(path, d)
		if err != nil {
			return fmt.Errorf("scaffold %s: %w", rel, err)
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		// O_EXCL: a file made meanwhile is not overwritten either.
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(content); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		written = append(written, rel)
		return nil
	})
	return written, err
}

// refuseNonEmpty refuses a dir that is a file, or a folder with anything
// in it.
func refuseNonEmpty(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%s exists and is not a folder: bundle init makes a new bundle folder and overwrites nothing", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s exists and is not empty (it holds %s): bundle init makes a new bundle folder and overwrites nothing", dir, entries[0].Name())
	}
	return nil
}

// render executes the scaffold file at path with d.
func render(path string, d data) ([]byte, error) {
	src, err := files.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := template.New(path).Delims("[[", "]]").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
