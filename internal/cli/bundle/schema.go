package bundle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/schema/infer"
)

type schemaFlags struct {
	output string
	write  bool
	force  bool
}

func newSchemaCommand() *cobra.Command {
	f := &schemaFlags{}
	cmd := &cobra.Command{
		Use:   "schema DIR [-o FILE | --write [--force]]",
		Short: "Infer a values schema from a bundle's values.yaml and the .Values paths its templates read",
		Long: `schema infers a JSON Schema (draft-07, as Helm's values.schema.json) of the
bundle's values from its values.yaml files (types, defaults, nested
objects, lists with one schema of their items) and from every .Values path
its templates and helpers read, subcharts' included (package
templates/schema/infer). Objects values.yaml gives keys of its own are
closed (additionalProperties: false); what a template writes out whole
(toYaml, toJson, tpl), ranges over by key or indexes by a computed key is
left open, which a published kind's CRD keeps as
x-kubernetes-preserve-unknown-fields. It is a start for the author to
edit: nothing is required, descriptions are not written.

The schema is printed, or written to FILE (-o), or to DIR/values.schema.json
(--write), which must not exist unless --force is given. What the templates read
that could not be followed (an include of a name computed at render time)
is noted on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSchema(f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write the schema to FILE instead of stdout")
	cmd.Flags().BoolVar(&f.write, "write", false, "write the schema to DIR/"+templates.SchemaFileJSON)
	cmd.Flags().BoolVar(&f.force, "force", false, "with --write, replace the folder's "+templates.SchemaFileJSON)
	cmd.MarkFlagsMutuallyExclusive("output", "write")
	return cmd
}

// runSchema infers the schema of the bundle folder dir and writes it
// where f says.
func runSchema(f *schemaFlags, dir string, out, stderr io.Writer) error {
	b, err := session.LoadFolder(dir, session.BundleName(dir))
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	r, err := infer.Bundle(b)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(stderr, "note: %s: %s\n", dir, n)
	}
	if r.Incomplete {
		fmt.Fprintf(stderr, "note: %s: the templates were not all followed (a bound of the walk): every object is left open\n", dir)
	}
	if _, ok := b.Spec().Files[templates.SchemaFileJSON]; ok {
		fmt.Fprintf(stderr, "note: %s: the bundle has a %s: it is not read, the schema is inferred anew\n", dir, templates.SchemaFileJSON)
	}
	js, err := r.JSON()
	if err != nil {
		return err
	}
	path := f.output
	if f.write {
		path = filepath.Join(dir, templates.SchemaFileJSON)
	}
	if path == "" {
		_, err := out.Write(js)
		return err
	}
	return writeSchema(path, js, f.force || !f.write)
}

// writeSchema writes js to path, which must not exist unless replace.
func writeSchema(path string, js []byte, replace bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if replace {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	file, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists: give --force to replace it", path)
	}
	if err != nil {
		return err
	}
	if _, err := file.Write(js); err != nil {
		_ = file.Close()
		return err
	}
	return file.Close()
}
