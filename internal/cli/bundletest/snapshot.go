package bundletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// maxDiffLines bounds the diff a snapshot failure prints.
const maxDiffLines = 40

// slugUnsafe are the runs of characters a case name's slug replaces.
var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// slug makes a file name of a case's or a snapshot's name: lower case,
// each run of other characters than letters and digits one dash.
func slug(name string) string {
	return strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// snapshotFile is the file of a snapshot of case c named name.
func (s *suite) snapshotFile(caseName, name string) string {
	file := slug(caseName)
	if name != "" {
		file += "-" + slug(name)
	}
	return filepath.Join(s.dir, SnapshotFolder, s.stem, file+".yaml")
}

func (s *suite) compileSnapshot(c *Case, a SnapshotAssertion, p *field.Path, seen map[string]bool) (check, *field.Error) {
	if slug(c.Name) == "" {
		return check{}, field.Invalid(p, omit, "the case's name has no letter or digit to name its snapshot file by")
	}
	if a.Name != "" && slug(a.Name) == "" {
		return check{}, field.Invalid(p.Child("name"), a.Name, "needs a letter or a digit, to name the snapshot file by")
	}
	file := s.snapshotFile(c.Name, a.Name)
	if seen[file] {
		return check{}, field.Duplicate(p.Child("name"), a.Name)
	}
	seen[file] = true
	s.snapshots[file] = true
	return check{run: func(_ context.Context, r *result) []string {
		objs := r.selected(a.Selector)
		if len(objs) == 0 && a.Selector != (Selector{}) {
			return noMatch(a.Selector, r)
		}
		got, err := snapshotText(objs)
		if err != nil {
			return []string{err.Error()}
		}
		return r.compareSnapshot(file, got)
	}}, nil
}

// snapshotText prints objects as `stencil render` does: each a YAML
// document after a "---" line.
func snapshotText(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", describeObject(o), err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

// compareSnapshot compares got with the snapshot file, or, updating,
// writes it when it differs.
func (r *result) compareSnapshot(file string, got []byte) []string {
	want, err := os.ReadFile(file)
	switch {
	case err == nil && bytes.Equal(want, got):
		return nil
	case r.update:
		if err := writeSnapshot(file, got); err != nil {
			return []string{err.Error()}
		}
		r.written = append(r.written, file)
		return nil
	case errors.Is(err, os.ErrNotExist):
		return []string{fmt.Sprintf("%s does not exist: run stencil test --update-snapshots to write it", file)}
	case err != nil:
		return []string{err.Error()}
	}
	diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: file, ToFile: "rendered", Context: 2,
	})
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines], fmt.Sprintf("... %d more lines", len(lines)-maxDiffLines))
	}
	return []string{fmt.Sprintf("the render differs from %s (--update-snapshots rewrites it):\n%s", file, strings.Join(lines, "\n"))}
}

// writeSnapshot writes a snapshot file and its folders.
func writeSnapshot(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// unusedSnapshots lists the files of the suite's snapshot folder that
// none of its cases compares with (a case renamed or removed).
func (s *suite) unusedSnapshots() []string {
	dir := filepath.Join(s.dir, SnapshotFolder, s.stem)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if file := filepath.Join(dir, e.Name()); !s.snapshots[file] {
			out = append(out, file)
		}
	}
	return out
}
