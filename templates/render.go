package templates

import (
	"bytes"
	"context"
	"strings"

	"github.com/stencil-dev/stencil/templates/budget"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/funcs"
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/notes"
	"github.com/stencil-dev/stencil/templates/observed"
	"github.com/stencil-dev/stencil/templates/values"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CompositionInfo is the Composition a render is for: .Composition in
// templates. For an instance of a kind a Bundle publishes, it is that
// instance.
type CompositionInfo struct {
	// APIVersion and Kind are the parent's: stencil.dev/v1alpha1 and
	// Composition, or the published kind's. Empty means a Composition.
	APIVersion, Kind string
	// Name is the Composition's name (also .Release.Name).
	Name string
	// Namespace is the Composition's namespace (also .Release.Namespace).
	Namespace string
	// UID is the Composition's UID.
	UID string
	// Labels are the Composition's labels.
	Labels map[string]string
	// Annotations are the Composition's annotations.
	Annotations map[string]string
}

// Input is everything a render depends on besides the bundle.
type Input struct {
	// Values are the Composition's spec.values, merged over values.yaml.
	Values *apiextensionsv1.JSON
	// Composition identifies the Composition.
	Composition CompositionInfo
	// Capabilities describes the cluster; nil means DefaultCapabilities.
	Capabilities *Capabilities
	// IsUpgrade is .Release.IsUpgrade (and the opposite of .Release.IsInstall).
	IsUpgrade bool
	// Revision is .Release.Revision (1 when 0).
	Revision int
	// Limits bound the whole render; a zero field takes its default
	// (budget.DefaultLimits).
	Limits budget.Limits
	// Progress, when not nil, is kept up to date with where the render
	// is, for a watchdog in another goroutine. It is never encoded.
	Progress *budget.Progress `json:"-"`
	// Observed is the observed state of the set's own members, by member
	// id (observed.MemberID), as the function observed and
	// observed.AnnotationWaitFor read it: only members of this set, and
	// only those the caller chose to give (the controller: those a render
	// of this parent addressed).
	// A member absent is not observed yet: its values read as nil.
	Observed map[string]map[string]any `json:"observed,omitempty"`
	// Lookups answers the template function lookup (package
	// templates/lookup): the objects the caller read for this render, by
	// lookup.Key. nil answers every lookup empty, as `helm template`.
	Lookups lookup.Table `json:"lookups,omitempty"`
	// Generated are the values earlier renders of the set generated (the
	// random strings, keys and certificates of package
	// templates/generators), by key: the same calls give them again.
	Generated map[string]string `json:"generated,omitempty"`
	// GeneratedKey is the set's secret key that the keys of Generated
	// are HMACs with (templates/generators.Key): the controller derives it
	// for each set from its own key (package reconcile/valuestore). It
	// reaches no template, status or message. nil keys them with an
	// empty key (offline: nothing is kept).
	GeneratedKey []byte `json:"generatedKey,omitempty"`
	// Observations, when not nil, is set to what the render read of
	// Observed and Lookups, what it generated and what it held back. It
	// is never encoded (package sandbox carries it back in its response).
	Observations *Observations `json:"-"`
	// Notes, when not nil, is set to the root chart's templates/NOTES.txt
	// as a render that succeeded printed it (package templates/notes;
	// the zero Notes without one). It is never encoded (package sandbox
	// carries it back in its response).
	Notes *Notes `json:"-"`
}

// Notes is what a render made of the root chart's NOTES.txt (package
// templates/notes).
type Notes = notes.Notes

// Observations is what a render read of Input.Observed and Lookups, what
// it generated and what it held back (package observed).
type Observations = observed.Observations

// newObserveLog is the log of what a render with in reads and generates.
func newObserveLog(in Input) *observed.Log {
	return observed.NewLog(in.Observed, in.Lookups, in.Generated, in.GeneratedKey)
}

// Render is RenderContext with no deadline: the Limits of in still bound it.
func Render(b *Bundle, in Input) ([]*unstructured.Unstructured, error) {
	return RenderContext(context.Background(), b, in)
}

// RenderContext renders the bundle for one Composition: values merged and
// validated, every file of templates/ but the partials (_*) executed in
// Helm's order (helmOrder: deepest first, then in reverse path order) and
// its output listed in path order, documents split and parsed (but a
// NOTES.txt's, which is the render's notes, in.Notes), kustomize run when
// the bundle has a kustomization.yaml.
// The result is deterministic: the same inputs give the same objects in
// the same order. Every error is a *RenderError naming the file and line or
// the values field path.
//
// The templates stop, with a RenderError of Reason ReasonTooLarge, past
// one of in.Limits (counted over the whole render), and with Reason
// ReasonTimeout once ctx's deadline passes; a ctx canceled otherwise stops
// them with a RenderError that wraps context.Canceled and has no Reason.
// in.Progress, when set, lets another goroutine see where the render is.
// A render that fails in its templates still sets in.Observations to what
// it read and looked up before the error (nothing generated).
func RenderContext(ctx context.Context, b *Bundle, in Input) ([]*unstructured.Unstructured, error) {
	vals, charts, err := b.mergeValues(in.Values)
	if err != nil {
		return nil, err
	}
	caps := in.Capabilities
	if caps == nil {
		caps = DefaultCapabilities()
	}
	if err := chart.CheckKubeVersion(b.chart, caps.KubeVersion.String()); err != nil {
		return nil, err
	}
	ps, err := b.parsedFor(charts)
	if err != nil {
		return nil, err
	}
	units := b.units(b.data(vals, in), charts)
	log := newObserveLog(in)
	outputs, err := b.executeUnits(ctx, ps, units, in, log)
	if err != nil {
		// What it read up to the error, so a caller can answer the
		// lookups of a render that failed for want of an answer.
		if in.Observations != nil {
			*in.Observations = log.Observations(nil)
			in.Observations.Generated = nil // never kept: nothing was written
		}
		return nil, err
	}
	// NOTES.txt files ran with the others (their errors are the
	// render's) and are no objects: the root's is the render's notes.
	units, printed := takeNotes(units, outputs)
	var objs []*unstructured.Unstructured
	if _, ok := b.spec.Files[KustomizationFile]; ok {
		in.Progress.SetFile(KustomizationFile)
		objs, err = b.kustomize(outputs)
	} else {
		objs, err = parseOutputs(units, outputs, in.Composition.Namespace, clusterKinds(in.Capabilities))
	}
	if err != nil {
		return nil, err
	}
	objs, held, err := log.HoldBack(objs)
	if err != nil {
		return nil, err
	}
	if in.Observations != nil {
		*in.Observations = log.Observations(held)
	}
	if in.Notes != nil {
		*in.Notes = Notes{Text: notes.Trim(printed)}
		in.Notes.Sensitive = in.Notes.Text != "" && log.Consulted()
	}
	return objs, nil
}

// takeNotes takes the NOTES.txt files out of units and outputs: executed,
// never objects (package templates/notes). It returns what the root's
// printed.
func takeNotes(units []unit, outputs map[string]string) ([]unit, string) {
	printed := outputs[notes.RootFile] // a subchart's key starts with charts/
	kept := make([]unit, 0, len(units))
	for _, u := range units {
		if notes.IsNotes(u.file) {
			delete(outputs, u.key)
			continue
		}
		kept = append(kept, u)
	}
	return kept, printed
}

// capabilities is .Capabilities: caps, with Helm's version.
func capabilities(caps *Capabilities) Capabilities {
	c := *caps
	c.HelmVersion = helmVersion
	return c
}

// clusterKinds is the set of caps.ClusterScopedKinds.
func clusterKinds(caps *Capabilities) map[string]bool {
	if caps == nil || len(caps.ClusterScopedKinds) == 0 {
		return nil
	}
	out := make(map[string]bool, len(caps.ClusterScopedKinds))
	for _, k := range caps.ClusterScopedKinds {
		out[k] = true
	}
	return out
}

// execute runs the root's templates in Helm's order (no subchart: tests
// call it), all charging one budget, and returns their outputs by name.
func (b *Bundle) execute(ctx context.Context, data map[string]any, in Input) (map[string]string, error) {
	return b.executeUnits(ctx, b.parsed, b.units(data, nil), in, newObserveLog(in))
}

// executeUnits runs units in order on a clone of the parsed set, all
// charging one budget, and returns their outputs by key.
func (b *Bundle) executeUnits(ctx context.Context, ps *parsedSet, units []unit, in Input, log *observed.Log) (map[string]string, error) {
	// The functions charge this render's budgets (guard.go): they are
	// bound on a clone of the parsed set, reused from an earlier render
	// when one is free.
	bs, _ := ps.bound.Get().(*boundSet)
	if bs == nil {
		var err error
		if bs, err = b.newBoundSet(ps); err != nil {
			return nil, &RenderError{Msg: err.Error(), Err: err}
		}
	}
	defer func() {
		bs.st.budget = budget.Budget{} // nothing of this render kept while the set waits
		bs.st.observe = nil
		ps.bound.Put(bs)
	}()
	limits := in.Limits.WithDefaults()
	bs.reset(budget.New(ctx, limits, in.Progress))
	bs.st.observe = log
	st := bs.st
	st.names = b.helmNames
	outputs := make(map[string]string, len(units))
	root := b.name
	if b.root != nil {
		root = b.root.Name
	}
	for _, u := range helmOrder(units, root) {
		name, data := u.file, u.data
		data["Template"] = u.tmpl
		st.unit = u.file
		var buf bytes.Buffer
		depth := st.budget.Depth()
		if err := st.execute(&buf, nil, name, data); err != nil {
			if berr := st.budget.Err(); berr != nil {
				err = berr // even if a function rewrapped it
			}
			if st.budget.Err() == nil && !b.spec.AllowNondeterministic && funcs.RefusedNondeterministic(err) &&
				bs.testHookOutput(name, data, depth) {
				outputs[u.key] = "" // test hooks only: never applied (testhooks.go)
				continue
			}
			if berr := st.budget.Err(); berr != nil {
				err = berr
			}
			return nil, executeError(name, err, limits)
		}
		outputs[u.key] = noValue(buf.String())
	}
	return outputs, nil
}

// noValueText is what text/template prints for a missing map key (and any
// nil interface) under missingkey=zero.
const noValueText = "<no value>"

// noValue erases "<no value>" from a template file's or tpl's output, as
// Helm's engine does (helm.sh/helm/v4 pkg/engine/engine.go, render and
// tplFun: strings.ReplaceAll(buf.String(), "<no value>", "")), so a
// missing key prints as an empty string. Like Helm, include's own result
// keeps it (Helm replaces only in a file's output and tpl's), so a helper
// printing a missing key tests true in an if, and the text is erased
// wherever it lands in the output, whatever produced it.
func noValue(s string) string {
	if !strings.Contains(s, noValueText) {
		return s
	}
	return strings.ReplaceAll(s, noValueText, "")
}

// Render is the method form of the package-level Render.
func (b *Bundle) Render(in Input) ([]*unstructured.Unstructured, error) { return Render(b, in) }

// data builds the top-level objects templates see.
func (b *Bundle) data(vals map[string]any, in Input) map[string]any {
	caps := in.Capabilities
	if caps == nil {
		caps = DefaultCapabilities()
	}
	rev := in.Revision
	if rev == 0 {
		rev = 1
	}
	return map[string]any{
		"Values":       values.Values(vals),
		"Composition":  in.Composition,
		"Bundle":       BundleInfo{Name: b.name, Revision: b.revision},
		"Release":      ReleaseInfo{Name: in.Composition.Name, Namespace: in.Composition.Namespace, Service: "stencil", IsInstall: !in.IsUpgrade, IsUpgrade: in.IsUpgrade, Revision: rev},
		"Chart":        chartInfo(b.chart),
		"Capabilities": capabilities(caps), // a value: a printed pointer would differ on every render
		"Files":        b.files,
	}
}

// BundleInfo is .Bundle in templates.
type BundleInfo struct {
	// Name is the Bundle's name.
	Name string
	// Revision is the Bundle's content hash.
	Revision string
}

// ReleaseInfo is Helm's .Release, filled from the Composition.
type ReleaseInfo struct {
	Name, Namespace, Service string
	IsInstall, IsUpgrade     bool
	Revision                 int
}

// TemplateInfo is Helm's .Template: the file being rendered.
type TemplateInfo struct {
	// Name is the template's path, such as templates/deployment.yaml.
	Name string
	// BasePath is "templates".
	BasePath string
}

// executeError turns an error of executing the template file into a
// RenderError: a stopped budget names the innermost bundle file and line
// executing and the bound passed (budget.StopError).
func executeError(file string, err error, l budget.Limits) *RenderError {
	if re := budget.StopError(file, err, l); re != nil {
		return re
	}
	return templateError(file, err)
}
