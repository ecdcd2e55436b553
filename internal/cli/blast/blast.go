package blast

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates"
)

// Output formats of the blast radius (diff -o).
const (
	outputChanges = "changes"
	outputDiff    = "diff"
)

// Flags are diff's flags for the blast radius of a Bundle change:
// `diff --bundle DIR` (or a Bundle manifest) without -f, or `diff -f
// bundle.yaml` where the file holds a Bundle: --bundle-name, -l and -o.
type Flags struct {
	bundleName string
	selector   string
	output     string
}

// Add adds --bundle-name, --selector (-l) and --output (-o) to cmd.
func (bf *Flags) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&bf.bundleName, "bundle-name", "", "the cluster Bundle the new version replaces (default: the folder's name, or the manifest's metadata.name)")
	cmd.Flags().StringVarP(&bf.selector, "selector", "l", "", "label selector narrowing the Compositions and instances a Bundle change is shown for (-l team=a)")
	cmd.Flags().StringVarP(&bf.output, "output", "o", "", "for a Bundle change: changes (default: the changed fields of each child) or diff (unified diffs, as for -f)")
}

// CheckOutput refuses an --output other than changes or diff.
func (bf *Flags) CheckOutput() error {
	if bf.output != "" && bf.output != outputChanges && bf.output != outputDiff {
		return fmt.Errorf("--output %q: want %s or %s", bf.output, outputChanges, outputDiff)
	}
	return nil
}

// BlastOnly names a flag given that only the blast radius takes ("" when
// none is).
func (bf *Flags) BlastOnly() string {
	switch {
	case bf.bundleName != "":
		return "--bundle-name"
	case bf.selector != "":
		return "--selector"
	case bf.output == outputChanges:
		return "--output=changes"
	}
	return ""
}

// Version is the new version of a Bundle whose blast radius diff
// shows: a folder or manifest (path), or a manifest read from -f.
type Version struct {
	// name is the cluster Bundle it replaces.
	name string
	// from names it in messages: the folder or file.
	from     string
	path     string
	manifest *v1alpha1.Bundle
}

// load loads the new version under its name.
func (v *Version) load(ctx context.Context, s *session.Session) (*templates.Bundle, error) {
	if v.manifest == nil {
		return s.LoadBundle(ctx, v.path, v.name)
	}
	b := v.manifest.DeepCopy()
	b.Name = v.name
	return templates.LoadObject(b)
}

// NewVersion returns the Bundle version diff is asked about, nil when -f
// holds Compositions or instances; then the stdin returned still holds
// what was read of it.
func (bf *Flags) NewVersion(f *flags.Plan, stdin io.Reader) (*Version, io.Reader, error) {
	if f.File == "" {
		name := bf.bundleName
		if name == "" {
			var err error
			if name, err = session.BundleNameAt(f.Bundle); err != nil {
				return nil, nil, fmt.Errorf("--bundle: %w", err)
			}
		}
		return &Version{name: name, from: f.Bundle, path: f.Bundle}, stdin, nil
	}
	data, err := parents.ReadFile(f.File, stdin)
	if err != nil {
		return nil, nil, err
	}
	stdin = bytes.NewReader(data)
	b, err := bundleManifest(f.File, data)
	if err != nil || b == nil {
		return nil, stdin, err
	}
	if f.Bundle != "" {
		return nil, nil, fmt.Errorf("%s holds a Bundle and --bundle gives another: give the new version once, with -f or with --bundle", f.File)
	}
	name := bf.bundleName
	if name == "" {
		name = b.Name
	}
	if name == "" {
		return nil, nil, fmt.Errorf("%s: the Bundle manifest has no metadata.name: pass --bundle-name", f.File)
	}
	return &Version{name: name, from: f.File, manifest: b}, stdin, nil
}

// bundleManifest returns the Bundle a -f file holds, nil when it holds
// none. A Bundle must be the file's only object.
func bundleManifest(path string, data []byte) (*v1alpha1.Bundle, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var bundle []byte
	objects := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil //nolint:nilerr // not a Bundle file: parents.Read reports the error, with the document's number
		}
		head, _, err := parents.ReadHead(doc)
		if err != nil {
			if errors.Is(err, parents.ErrNotObject) {
				continue
			}
			return nil, nil
		}
		if head.APIVersion == "" && head.Kind == "" {
			continue
		}
		objects++
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err == nil && gv.Group == v1alpha1.GroupVersion.Group && head.Kind == "Bundle" {
			bundle = doc
		}
	}
	switch {
	case bundle == nil:
		return nil, nil
	case objects > 1:
		return nil, fmt.Errorf("%s holds a Bundle and %d other objects: give the Bundle alone for the blast radius of its change, or only Compositions and instances for their diff", path, objects-1)
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict(bundle, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}
