package templates

import (
	"bytes"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates/funcs"
	"github.com/stencil-dev/stencil/templates/manifest"
)

// This file lets Helm test hooks call nondeterministic functions. A test
// hook (helm.sh/hook: test, test-success or test-failure) is run by
// `helm test`, never by an install; stencil never applies or prints one.
// Charts such as podinfo call randAlphaNum in theirs, so refusing them
// would refuse the chart for objects nobody sees.
//
// A template's objects are known only once it has run, so a template
// whose execution is refused for a nondeterministic function is run
// again with those functions allowed: if every object it writes is a
// test hook, its output is dropped; otherwise the first refusal stands,
// with the file and line of the call.

// hookAnnotation is Helm's hook annotation.
const hookAnnotation = "helm.sh/hook"

// testHookPoints are the hook points `helm test` runs, and only it.
var testHookPoints = []string{"test", "test-success", "test-failure"}

// testHookOutput runs the template file name again with the
// nondeterministic functions allowed, after its execution was refused
// for calling one, and reports whether every object it writes is a test
// hook (its output is then dropped). A template that fails otherwise, or
// writes anything else, is not one. The tpl clones of the render are set
// aside meanwhile, as they hold the refusing functions.
func (bs *boundSet) testHookOutput(name string, data any, depth int64) bool {
	st := bs.st
	tpls, scratch := st.tpls, st.scratch
	st.tpls, st.scratch = nil, nil
	st.set = bs.set
	st.budget.SetDepth(depth) // the refused execution returned mid-way
	funcs.BindNondeterministic(bs.set.Template(), bs.g, true)
	defer func() {
		funcs.BindNondeterministic(bs.set.Template(), bs.g, false)
		st.tpls, st.scratch = tpls, scratch
		st.set = bs.set
		st.budget.SetDepth(depth)
	}()
	var buf bytes.Buffer
	if err := st.execute(&buf, nil, name, data); err != nil {
		return false
	}
	objs, _, err := manifest.Parse(name, noValue(buf.String()))
	if err != nil {
		return false
	}
	for _, o := range objs {
		if !isTestHook(o.GetAnnotations()[hookAnnotation]) {
			return false
		}
	}
	return true
}

// isTestHook reports whether a helm.sh/hook annotation names test hook
// points only (Helm splits it at commas and trims each point).
func isTestHook(hook string) bool {
	if strings.TrimSpace(hook) == "" {
		return false
	}
	for p := range strings.SplitSeq(hook, ",") {
		if !slices.Contains(testHookPoints, strings.TrimSpace(p)) {
			return false
		}
	}
	return true
}
