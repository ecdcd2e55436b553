package templates

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/stencil-dev/stencil/templates/budget"
)

// This file holds Helm's tpl: a string rendered as a template with the
// bundle's helpers, charging the render's budget.

// tplKey is a text tpl parsed in a set, at a call site.
type tplKey struct {
	set  *budget.Set
	site int
	text string
}

// maxTplClones bounds renderState.tpls: past it, they are forgotten.
const maxTplClones = 32

// tplName is the name tpl parses its text under; its points report the
// tpl call's own file and line.
const tplName = "tpl"

// tpl renders a string as a template with the bundle's helpers, as Helm's
// tpl: as if in a clone of the set, so its defines stay its own. It
// charges the render's budget.
func (st *renderState) tpl(site int, text string, data any) (string, error) {
	loc := st.set.Location(site)
	var prev *template.Template // tplName in the scratch set, to restore
	scratch := st.scratch
	if scratch != nil {
		prev = scratch.Template().Lookup(tplName)
	}
	e, err := st.tplEntry(site, text)
	if err != nil {
		return "", err
	}
	outer := st.set
	st.set = e.set
	defer func() { st.set = outer }()
	t := e.set.Template().Lookup(tplName)
	if e.tree != nil {
		// The text is tplName in the scratch set while it runs, as in a
		// clone; a tpl running it (nested) gets its own back after.
		if t, err = e.set.Template().AddParseTree(tplName, e.tree); err != nil {
			return "", err
		}
		if prev != nil && prev.Tree != e.tree && e.set == scratch {
			defer func() { _, _ = e.set.Template().AddParseTree(tplName, prev.Tree) }()
		}
	}
	var buf bytes.Buffer
	if err := st.budget.Run(&buf, loc, st.set, t, data); err != nil {
		return "", fmt.Errorf("tpl: %w", err)
	}
	return noValue(buf.String()), nil
}

// tplEntry is where tpl runs a text: in a clone of the set (set; tree
// nil) when the text may define templates, else as tree in the scratch
// set, a clone of the render's set made once for the texts of every
// render of the bound set, so that a tpl costs no clone of some 200
// functions.
type tplEntry struct {
	set  *budget.Set
	tree *parse.Tree
}

// tplEntry returns where to run text, parsed and instrumented, every point
// reporting site.
func (st *renderState) tplEntry(site int, text string) (*tplEntry, error) {
	key := tplKey{set: st.set, site: site, text: text}
	if e, ok := st.tpls[key]; ok {
		return e, nil
	}
	if len(st.tpls) >= maxTplClones || st.tpls == nil {
		st.tpls = make(map[tplKey]*tplEntry)
		st.scratch = nil
	}
	var e *tplEntry
	if st.set == st.base && !strings.Contains(text, "define") && !strings.Contains(text, "block") {
		if st.scratch == nil {
			set, err := st.base.Clone()
			if err != nil {
				return nil, err
			}
			st.scratch = set
		}
		tree, err := st.parse(st.scratch, site, text)
		if err != nil {
			return nil, err
		}
		if tree != nil {
			e = &tplEntry{set: st.scratch, tree: tree}
		}
	}
	if e == nil { // defines, or an empty text (which would not replace tplName)
		set, err := st.set.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := st.parse(set, site, text); err != nil {
			return nil, err
		}
		e = &tplEntry{set: set}
	}
	st.tpls[key] = e
	return e, nil
}

// parse parses text as tplName in set, instruments the trees it made
// (every point reporting site) and binds their points; it returns
// tplName's tree, nil if the text did not replace it (an empty text).
func (st *renderState) parse(set *budget.Set, site int, text string) (*parse.Tree, error) {
	tmpl := set.Template()
	var oldTree *parse.Tree
	if old := tmpl.Lookup(tplName); old != nil {
		oldTree = old.Tree
	}
	if _, err := tmpl.New(tplName).Parse(text); err != nil {
		return nil, fmt.Errorf("tpl: %w", err)
	}
	n, err := set.InstrumentTpl(site)
	if err != nil {
		return nil, err
	}
	tmpl.Funcs(pointFuncs(st, st.g, set.Points()[n:], n))
	t := tmpl.Lookup(tplName)
	if t == nil || t.Tree == oldTree {
		return nil, nil
	}
	return t.Tree, nil
}
