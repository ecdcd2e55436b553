package chart

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/funcs"
)

// HelmIgnoreFile lists, in a bundle folder, the files Load leaves out, as
// Helm's .helmignore does for a chart folder.
const HelmIgnoreFile = ".helmignore"

// IgnoreRules are the rules of a .helmignore file, ported from Helm's
// pkg/ignore (helm.sh/helm/v4@v4.3.1 pkg/ignore/rules.go) so a chart's
// folder loads the same files in stencil as in Helm. The format follows
// .gitignore loosely:
//
//   - one pattern a line; blank lines and lines starting with # are
//     skipped; leading and trailing spaces are trimmed;
//   - patterns are path.Match globs; "**" is an error;
//   - a pattern with no slash matches a file's or folder's base name, one
//     starting with / matches the path from the bundle's root, any other
//     one with a slash matches the whole path;
//   - a trailing / matches folders only; an ignored folder is skipped
//     whole;
//   - a leading ! negates, with Helm's meaning (not git's): a path that
//     does not match a negated pattern is ignored, as is a file tested
//     against a negated folder pattern.
//
// Helm adds `templates/.?*` after the file's rules (hidden files right
// under templates/), and so does newIgnoreRules. The .helmignore file
// itself is a file of the bundle unless a rule ignores it, as in Helm.
type IgnoreRules struct {
	patterns []ignorePattern
}

type ignorePattern struct {
	glob    string
	negate  bool
	mustDir bool
	base    bool // matched against the base name (no slash), else the path
}

// newIgnoreRules parses a .helmignore (text may be "": no file) and adds
// Helm's default rule. A bad pattern is a RenderError at its line.
func newIgnoreRules(text string) (*IgnoreRules, error) {
	r := &IgnoreRules{}
	s := bufio.NewScanner(strings.NewReader(strings.TrimPrefix(text, "\uFEFF")))
	s.Buffer(nil, funcs.MaxFunctionBytes)
	line := 0
	for s.Scan() {
		line++
		if err := r.add(s.Text()); err != nil {
			return nil, &fault.RenderError{File: HelmIgnoreFile, Line: line, Msg: err.Error()}
		}
	}
	if err := s.Err(); err != nil {
		return nil, &fault.RenderError{File: HelmIgnoreFile, Line: line + 1, Msg: err.Error(), Err: err}
	}
	_ = r.add(`templates/.?*`) // Helm's AddDefaults
	return r, nil
}

// add parses one line as Helm's parseRule.
func (r *IgnoreRules) add(rule string) error {
	rule = strings.TrimSpace(rule)
	if rule == "" || strings.HasPrefix(rule, "#") {
		return nil
	}
	if strings.Contains(rule, "**") {
		return errors.New("double-star (**) syntax is not supported")
	}
	if _, err := path.Match(rule, "abc"); err != nil {
		return errors.New("syntax error in pattern")
	}
	p := ignorePattern{}
	if after, ok := strings.CutPrefix(rule, "!"); ok {
		p.negate, rule = true, after
	}
	if before, ok := strings.CutSuffix(rule, "/"); ok {
		p.mustDir, rule = true, before
	}
	switch {
	case strings.HasPrefix(rule, "/"):
		p.glob = rule[1:]
	case strings.Contains(rule, "/"):
		p.glob = rule
	default:
		p.glob, p.base = rule, true
	}
	r.patterns = append(r.patterns, p)
	return nil
}

func (p ignorePattern) match(name string) bool {
	if p.base {
		name = path.Base(name)
	}
	ok, _ := path.Match(p.glob, name)
	return ok
}

// Ignore reports whether the path (slash-separated, from the bundle's
// root) is left out, as Helm's Rules.Ignore.
func (r *IgnoreRules) Ignore(name string, isDir bool) bool {
	if name == "" || name == "." || name == "./" {
		return false
	}
	for _, p := range r.patterns {
		if p.negate {
			if p.mustDir && !isDir {
				return true
			}
			if !p.match(name) {
				return true
			}
			continue
		}
		if p.mustDir && !isDir {
			continue
		}
		if p.match(name) {
			return true
		}
	}
	return false
}

// LoadIgnoreRules reads the folder's .helmignore, if it has one. Like the
// rest of a folder, it must be a regular file.
func LoadIgnoreRules(fsys fs.FS) (*IgnoreRules, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, &fault.RenderError{Msg: fmt.Sprintf("read bundle folder: %v", err), Err: err}
	}
	i := slices.IndexFunc(entries, func(e fs.DirEntry) bool { return e.Name() == HelmIgnoreFile })
	if i < 0 {
		return newIgnoreRules("")
	}
	if !entries[i].Type().IsRegular() {
		return nil, &fault.RenderError{File: HelmIgnoreFile, Msg: "not a regular file: a bundle holds regular files and folders only"}
	}
	if info, err := entries[i].Info(); err == nil && info.Size() > funcs.MaxFunctionBytes {
		return nil, &fault.RenderError{File: HelmIgnoreFile, Reason: fault.ReasonTooLarge, Msg: fmt.Sprintf("larger than %d bytes", funcs.MaxFunctionBytes)}
	}
	data, err := fs.ReadFile(fsys, HelmIgnoreFile)
	if err != nil {
		return nil, &fault.RenderError{File: HelmIgnoreFile, Msg: err.Error(), Err: err}
	}
	return newIgnoreRules(string(data))
}
