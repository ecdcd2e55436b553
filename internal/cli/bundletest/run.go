package bundletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// Runner runs the cases of bundle folders.
type Runner struct {
	// Renderer renders, as the controller's sandbox does.
	Renderer plan.Renderer
	// UpdateSnapshots writes every snapshot that differs from the
	// render, or is missing, instead of failing.
	UpdateSnapshots bool
	// Out receives a line per case, its failures and a summary; Notes
	// what the user should know that is no failure.
	Out, Notes io.Writer
	// Now is the clock cases are timed with (time.Now when nil).
	Now func() time.Time
}

// Bundle is the result of one bundle folder's cases.
type Bundle struct {
	// Dir is the folder, as given.
	Dir string
	// Name is the bundle's name (the folder's).
	Name string
	// Suites are its case files' results, in file order.
	Suites []Suite
}

// Suite is the result of one case file.
type Suite struct {
	// File is the case file.
	File string
	// Cases are its cases' results, in order.
	Cases []Result
}

// Result is the result of one case.
type Result struct {
	// Name is the case's.
	Name string
	// Failures are the assertions that did not hold, each as the
	// output prints it; none when the case passed.
	Failures []string
	// Assertions is how many assertions the case has.
	Assertions int
	// Written are the snapshot files written (--update-snapshots).
	Written []string
	// Elapsed is how long the case took, render included.
	Elapsed time.Duration
}

// Cases are a bundle folder's cases, loaded and checked by Load.
type Cases struct {
	// Dir is the bundle folder, as given.
	Dir    string
	bundle *templates.Bundle
	suites []*suite
}

// Load loads the bundle folder dir and checks every case file of its
// tests/ folder. A bad case file is a *FileError naming each problem's
// field (one per file, joined with errors.Join); any other error stops
// the load.
func Load(dir string) (*Cases, error) {
	name := session.BundleName(dir)
	b, err := session.LoadFolder(dir, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	files, err := caseFiles(dir)
	if err != nil {
		return nil, err
	}
	cs := &Cases{Dir: dir, bundle: b}
	var errs []error
	for _, f := range files {
		s, err := loadSuite(f, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs.suites = append(cs.suites, s)
	}
	return cs, errors.Join(errs...)
}

// Run runs the cases cs, printing each case's line and failures.
func (r *Runner) Run(ctx context.Context, cs *Cases) Bundle {
	out := Bundle{Dir: cs.Dir, Name: cs.bundle.Name()}
	if tests := testFiles(cs.bundle); len(tests) > 0 {
		fmt.Fprintf(r.Notes, "note: %s: the bundle's files hold %s (%s of %s/ in all): add %s/ to .helmignore to leave the tests out of the Bundle\n", cs.Dir, tests[0], plural(len(tests), "file"), TestsFolder, TestsFolder)
	}
	for _, s := range cs.suites {
		res := Suite{File: s.path}
		for _, c := range s.cases {
			res.Cases = append(res.Cases, r.runCase(ctx, cs.Dir, c))
		}
		out.Suites = append(out.Suites, res)
		for _, file := range s.unusedSnapshots() {
			fmt.Fprintf(r.Notes, "note: %s is no case's snapshot (a case renamed or removed?): delete it\n", file)
		}
	}
	return out
}

// testFiles lists the files of the bundle under tests/.
func testFiles(b *templates.Bundle) []string {
	var out []string
	for name := range b.Spec().Files {
		if strings.HasPrefix(name, TestsFolder+"/") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// runCase renders c and checks its assertions.
func (r *Runner) runCase(ctx context.Context, dir string, c *testCase) Result {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	objs, err := r.render(ctx, dir, c)
	res := &result{objects: objs, err: err, update: r.UpdateSnapshots}
	out := Result{Name: c.name, Assertions: len(c.checks)}
	var failures []failure
	if err != nil && !c.fails {
		failures = append(failures, failure{"render", err.Error()})
	} else {
		for _, ch := range c.checks {
			for _, text := range ch.run(ctx, res) {
				failures = append(failures, failure{ch.label, text})
			}
		}
	}
	out.Elapsed = now().Sub(start)
	out.Written = res.written
	for _, f := range failures {
		out.Failures = append(out.Failures, f.String())
	}
	r.print(c, out)
	return out
}

// render renders the bundle at dir for c, offline, as `stencil render`
// does: the objects the controller would apply, the chart's crds/ CRDs
// first.
func (r *Runner) render(ctx context.Context, dir string, c *testCase) ([]*unstructured.Unstructured, error) {
	s, err := session.Offline(genericclioptions.NewConfigFlags(false))
	if err != nil {
		return nil, err
	}
	s.UseFixture(c.fixture)
	doc, err := c.document(session.BundleName(dir))
	if err != nil {
		return nil, err
	}
	parent, b, err := s.Resolve(ctx, dir, doc)
	if err != nil {
		return nil, err
	}
	pl, err := s.Plan(ctx, r.Renderer, b, parent)
	if err != nil {
		return nil, err
	}
	return append(slices.Clone(pl.CRDs), pl.Objects...), nil
}

// document is the parent c renders for: a Composition of the bundle, or
// an instance of the kind it publishes.
func (c *testCase) document(bundle string) (parents.Document, error) {
	p := c.parent
	meta := metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations}
	if p.Kind == "" {
		comp := &v1alpha1.Composition{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Composition"},
			ObjectMeta: meta,
			Spec:       v1alpha1.CompositionSpec{Bundle: bundle},
		}
		if c.values != nil {
			comp.Spec.Values = &apiextensionsv1.JSON{Raw: c.values}
		}
		return parents.Document{Composition: comp}, nil
	}
	inst := &unstructured.Unstructured{Object: map[string]any{}}
	inst.SetAPIVersion(p.APIVersion)
	inst.SetKind(p.Kind)
	inst.SetName(p.Name)
	inst.SetNamespace(p.Namespace)
	inst.SetLabels(p.Labels)
	inst.SetAnnotations(p.Annotations)
	if c.values != nil {
		var spec map[string]any
		if err := json.Unmarshal(c.values, &spec); err != nil {
			return parents.Document{}, err
		}
		inst.Object["spec"] = spec
	}
	return parents.Document{Instance: inst}, nil
}

// print prints a case's line and its failures.
func (r *Runner) print(c *testCase, res Result) {
	status := "PASS"
	if len(res.Failures) > 0 {
		status = "FAIL"
	}
	fmt.Fprintf(r.Out, "%s %s: %s (%s)\n", status, c.suite.path, c.name, plural(res.Assertions, "assertion"))
	for _, f := range res.Failures {
		fmt.Fprintf(r.Out, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
	}
	for _, w := range res.Written {
		fmt.Fprintf(r.Out, "    wrote %s\n", w)
	}
}

// plural is "1 case", "2 cases".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Counts are how many cases passed and failed.
func Counts(bundles []Bundle) (passed, failed int) {
	for _, b := range bundles {
		for _, s := range b.Suites {
			for _, c := range s.Cases {
				if len(c.Failures) > 0 {
					failed++
				} else {
					passed++
				}
			}
		}
	}
	return passed, failed
}
