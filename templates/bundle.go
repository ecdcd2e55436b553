package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates/budget"
	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/generators"
	"github.com/stencil-dev/stencil/templates/kustomize"
	"github.com/stencil-dev/stencil/templates/manifest"
	"github.com/stencil-dev/stencil/templates/schema"
)

// Files of a bundle folder with a meaning of their own.
const (
	// ValuesFile holds the default values.
	ValuesFile = chart.ValuesFile
	// SchemaFileJSON holds a JSON Schema of the values, as a Helm chart's:
	// values are validated with it, never defaulted. It is a file of the
	// bundle, in a folder and in a Bundle's spec.files.
	SchemaFileJSON = chart.SchemaFileJSON
	// SchemaFileYAML holds, in a folder, the Bundle's spec.schema: an
	// OpenAPI v3 structural schema of the values, as a CRD's, that
	// defaults and validates them.
	SchemaFileYAML = "values.schema.yaml"
	// OptionsFile holds, in a folder, the Bundle's permissions,
	// allowNondeterministic, api, outputs and readiness (spec.permissions,
	// spec.allowNondeterministic, spec.api, spec.outputs and
	// spec.readiness).
	OptionsFile = "stencil.yaml"
	// ChartFile is Helm's Chart.yaml, read into .Chart.
	ChartFile = chart.ChartFile
	// HelmIgnoreFile names what a bundle folder leaves out, as a chart's.
	HelmIgnoreFile = chart.HelmIgnoreFile
	// KustomizationFile turns on kustomize post-processing (see package
	// kustomize).
	KustomizationFile = kustomize.File
)

// LoadOptions configure loading a bundle folder.
type LoadOptions struct {
	// Name is the bundle's name (.Bundle.Name); a Bundle object's is its metadata.name.
	Name string
}

// options is the shape of stencil.yaml.
type options struct {
	Permissions           v1alpha1.BundlePermissions `json:"permissions,omitempty"`
	AllowNondeterministic bool                       `json:"allowNondeterministic,omitempty"`
	CRDs                  v1alpha1.CRDPolicy         `json:"crds,omitempty"`
	API                   *v1alpha1.BundleAPI        `json:"api,omitempty"`
	Outputs               []v1alpha1.BundleOutput    `json:"outputs,omitempty"`
	Readiness             []v1alpha1.ReadinessRule   `json:"readiness,omitempty"`
	ValuesMigrations      []v1alpha1.ValuesMigration `json:"valuesMigrations,omitempty"`
	// NamespaceSelector is spec.namespaceSelector: who may use the
	// Bundle, not what it renders, so it is no part of the revision.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Rollout, Revisions and Pruning are spec.rollout, spec.revisions and
	// spec.pruning: how the Bundle's revisions reach its parents, not
	// what they render, so no part of the revision either.
	Rollout   *v1alpha1.RolloutPolicy  `json:"rollout,omitempty"`
	Revisions *v1alpha1.RevisionPolicy `json:"revisions,omitempty"`
	Pruning   *v1alpha1.PrunePolicy    `json:"pruning,omitempty"`
}

// Bundle is a loaded bundle: its files, parsed templates, default values and
// schema, and the policy it renders under (its spec's permissions and crds
// policy, or narrower: Within). It is immutable and safe for concurrent
// Render calls.
type Bundle struct {
	*content
	// perms and crds are what the bundle may create beyond its parent's
	// namespace and what becomes of its crds/ folders: its spec's, or
	// what Within narrowed them to.
	perms v1alpha1.BundlePermissions
	crds  v1alpha1.CRDPolicy
}

// content is a loaded bundle's content, parsed once and shared by every
// Bundle that renders it (Within).
type content struct {
	name       string
	spec       v1alpha1.BundleSpec
	revision   string
	defaults   map[string]any
	schema     *schema.OpenAPI    // spec.schema (OpenAPI v3)
	jsonSchema *jsonschema.Schema // values.schema.json
	chart      map[string]any
	files      Files // .Files
	// parsed is the parsed set of the subcharts enabled by the
	// defaults (parsedSets).
	parsed *parsedSet
	// variants are the parsed sets of other sets of enabled subcharts,
	// by key, made when a render first needs one (at most maxVariants).
	variantsMu sync.Mutex
	variants   map[string]*parsedSet
	lastValues atomic.Pointer[mergedValues]
	// migrations are spec.valuesMigrations, compiled (migrate.go).
	migrations []migration
	emitted    []string // the root's templates (chart.IsTemplate), sorted
	// sources are the files, chart archives unpacked (chart_archive.go);
	// root is the chart tree when the bundle has subcharts (chart.go).
	sources map[string]string
	root    *chart.Node
	// helmNames maps the names Helm gives the subcharts' templates
	// (parent/charts/alias/templates/x.yaml, .Template.Name) to their
	// bundle paths, the names they are parsed under.
	helmNames map[string]string
	// crdFiles caches the parsed crds/ files (crds.go), by path.
	crdFiles sync.Map
	// generates caches MayGenerate.
	generatesOnce sync.Once
	generates     bool
}

// Load loads a bundle folder: values.yaml, values.schema.json (JSON
// Schema), values.schema.yaml (spec.schema), stencil.yaml, Chart.yaml,
// templates/** (every file, as Helm: chart.IsTemplate, chart.IsHelper)
// and kustomization.yaml with the files it references. It gives the same Bundle as LoadObject on the
// manifest `stencil bundle pack` makes of the folder.
//
// The files and folders the folder's .helmignore names are left out, with
// Helm's rules (ignoreRules), as `helm package` and Helm's folder loader
// leave them out of a chart; hidden files right under templates/ too.
// What is left out is not read at all, so an ignored link or special file
// is no error.
//
// A bundle holds regular files and folders only: a symbolic link, wherever
// it points (outside the folder or inside it), and any other special file
// (a pipe, socket or device) is a RenderError naming it. So a folder never
// pulls in a file from outside itself, and what is packed is what the
// folder holds. The folder itself (fsys's root) may be reached through a
// link. Callers reading a folder of the disk should pass an os.Root's FS,
// which cannot open a file outside the folder even if it changes while it
// is read.
func Load(fsys fs.FS, opts LoadOptions) (*Bundle, error) {
	rules, err := chart.LoadIgnoreRules(fsys)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if rules.Ignore(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if t := d.Type(); !t.IsRegular() {
			what := "a special file"
			if t&fs.ModeSymlink != 0 {
				what = "a symbolic link"
			}
			return &RenderError{File: p, Msg: what + ": a bundle holds regular files and folders only (copy the file into the bundle)"}
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files[p] = string(data)
		return nil
	})
	var re *RenderError
	if errors.As(err, &re) {
		return nil, re
	}
	if err != nil {
		return nil, &RenderError{Msg: fmt.Sprintf("read bundle folder: %v", err), Err: err}
	}
	spec := v1alpha1.BundleSpec{Files: files}
	if s, ok := files[SchemaFileYAML]; ok {
		js, err := yaml.YAMLToJSON([]byte(s))
		if err != nil {
			return nil, &RenderError{File: SchemaFileYAML, Msg: err.Error(), Err: err}
		}
		spec.Schema = &apiextensionsv1.JSON{Raw: js}
		delete(files, SchemaFileYAML)
	}
	if s, ok := files[OptionsFile]; ok {
		var o options
		if err := yaml.UnmarshalStrict([]byte(s), &o); err != nil {
			return nil, &RenderError{File: OptionsFile, Msg: err.Error(), Err: err}
		}
		spec.Permissions, spec.AllowNondeterministic, spec.API = o.Permissions, o.AllowNondeterministic, o.API
		spec.CRDs = o.CRDs
		spec.Outputs, spec.Readiness = o.Outputs, o.Readiness
		spec.ValuesMigrations = o.ValuesMigrations
		spec.NamespaceSelector = o.NamespaceSelector
		spec.Rollout, spec.Revisions, spec.Pruning = o.Rollout, o.Revisions, o.Pruning
		delete(files, OptionsFile)
	}
	return newBundle(opts.Name, spec)
}

// LoadObject loads a Bundle object.
func LoadObject(b *v1alpha1.Bundle) (*Bundle, error) {
	return newBundle(b.Name, *b.Spec.DeepCopy())
}

func newBundle(name string, spec v1alpha1.BundleSpec) (*Bundle, error) {
	for p := range spec.Files {
		if path.IsAbs(p) || p != path.Clean(p) || strings.HasPrefix(p, "../") {
			return nil, &RenderError{File: p, Msg: "file paths must be relative, clean and inside the bundle"}
		}
	}
	// Chart archives are unpacked (as `stencil bundle pack` does), and
	// every file stencil reads as text must be UTF-8 (chart.IsText): a
	// template's invalid byte is refused here, naming it, rather than
	// found garbled in the output. Other files are .Files, any bytes, as
	// in Helm (a render worker receives them byte for byte, see package
	// sandbox).
	files, err := chart.ExpandArchives(spec.Files)
	if err != nil {
		return nil, err
	}
	for p, c := range files {
		if !chart.IsText(p) {
			continue
		}
		if line, col, bad, invalid := manifest.InvalidUTF8(c); invalid {
			return nil, &RenderError{File: p, Line: line,
				Msg: fmt.Sprintf("is not valid UTF-8: byte %#x at column %d (stencil reads this file as text)", bad, col)}
		}
	}
	spec.Files = files
	b := &Bundle{content: &content{name: name, spec: spec, revision: revision(spec)}, perms: spec.Permissions, crds: spec.CRDs}
	if b.defaults, err = chart.ParseValues(spec.Files[ValuesFile]); err != nil {
		return nil, err
	}
	if b.schema, err = schema.NewOpenAPI(spec.Schema); err != nil {
		return nil, err
	}
	if b.migrations, err = compileMigrations(spec.ValuesMigrations); err != nil {
		return nil, err
	}
	if s, ok := spec.Files[SchemaFileJSON]; ok {
		if b.jsonSchema, err = schema.NewJSON(s); err != nil {
			return nil, err
		}
	}
	if c, ok := spec.Files[ChartFile]; ok {
		if err := yaml.Unmarshal([]byte(c), &b.chart); err != nil {
			return nil, &RenderError{File: ChartFile, Msg: err.Error(), Err: err}
		}
		if err := chart.ValidKubeVersion(b.chart); err != nil {
			return nil, err
		}
	}
	b.files = chart.HelmFiles(spec.Files, b.chart)
	if err := b.loadCharts(); err != nil {
		return nil, err
	}
	for p := range spec.Files {
		if chart.IsTemplate(p) {
			b.emitted = append(b.emitted, p)
		}
	}
	sort.Strings(b.emitted)
	if err := b.parseDefault(); err != nil {
		return nil, err
	}
	return b, nil
}

// parsedSet is the root's templates and helpers and those of one set of
// enabled subcharts, parsed.
type parsedSet struct {
	key   string      // enabledKey of the subcharts parsed
	tmpl  *budget.Set // every template and helper, each under its file name, instrumented
	bound *sync.Pool  // *boundSet: clones of tmpl bound to a render's functions, reused
}

// maxVariants bounds the parsed sets a Bundle keeps besides its
// defaults': past it, one is dropped.
const maxVariants = 8

// enabledKey names the set of charts in enabled (nil: the root alone).
func enabledKey(enabled *chart.Instance) string {
	var dirs []string
	var walk func(in *chart.Instance)
	walk = func(in *chart.Instance) {
		for _, ch := range in.Children {
			dirs = append(dirs, ch.Chart.Dir)
			walk(ch)
		}
	}
	if enabled != nil {
		walk(enabled)
	}
	slices.Sort(dirs)
	return strings.Join(slices.Compact(dirs), "\x00")
}

// parseDefault parses the root's files and those of the subcharts the
// defaults enable. Subcharts are parsed only when enabled, as in Helm
// (which removes a disabled one from the chart before parsing): a
// render enabling others parses its own set (parsedFor). When the
// defaults do not resolve, the root alone is parsed here and the render
// reports the values' error.
func (b *Bundle) parseDefault() error {
	var enabled *chart.Instance
	if b.root != nil && len(b.root.Children) > 0 {
		enabled, _ = chart.Resolve(b.root, b.defaults, map[string]any{})
	}
	ps, err := b.parse(enabled)
	if err != nil {
		return err
	}
	b.parsed = ps
	return nil
}

// parsedFor returns the parsed set for the enabled subcharts, parsing
// it the first time.
func (b *Bundle) parsedFor(enabled *chart.Instance) (*parsedSet, error) {
	key := enabledKey(enabled)
	if key == b.parsed.key {
		return b.parsed, nil
	}
	b.variantsMu.Lock()
	defer b.variantsMu.Unlock()
	if ps := b.variants[key]; ps != nil {
		return ps, nil
	}
	ps, err := b.parse(enabled)
	if err != nil {
		return nil, err
	}
	if b.variants == nil {
		b.variants = map[string]*parsedSet{}
	}
	for k := range b.variants {
		if len(b.variants) < maxVariants {
			break
		}
		delete(b.variants, k)
	}
	b.variants[key] = ps
	return ps, nil
}

// parse parses every template and helper of the root and of the enabled
// subcharts under its own file name, so errors keep their file and line.
func (b *Bundle) parse(enabled *chart.Instance) (*parsedSet, error) {
	// The set is parsed with the functions of a first boundSet, which the
	// first render takes: a cold render binds them once.
	first := newBoundSetOf(nil)
	t, err := b.parseFiles(b.parseNames(enabled), funcMap(first.st, first.g, b.spec.AllowNondeterministic))
	if err != nil {
		return nil, err
	}
	ps := &parsedSet{key: enabledKey(enabled), tmpl: budget.NewSet(t)}
	// The budget's points, each at its file and line (package budget).
	if err := ps.tmpl.InstrumentFiles(b.sources); err != nil {
		return nil, err
	}
	first.set = ps.tmpl
	t.Funcs(pointFuncs(first.st, first.g, ps.tmpl.Points(), 0))
	ps.bound = &sync.Pool{}
	ps.bound.Put(first)
	return ps, nil
}

// parseNames lists the files parse parses for the enabled subcharts, in
// the order it parses them: the subcharts' first (chart.Templates), so
// that the root's defines replace theirs, then the root's templates and
// helpers in path order.
func (b *Bundle) parseNames(enabled *chart.Instance) []string {
	var names []string
	for p := range b.spec.Files {
		if chart.IsTemplate(p) || chart.IsHelper(p) {
			names = append(names, p)
		}
	}
	sort.Strings(names)
	return append(chart.Templates(enabled, b.sources), names...)
}

// parseFiles parses names, in order, each under its own name in one set
// with the functions fm: a parse error names its file and line.
func (b *Bundle) parseFiles(names []string, fm template.FuncMap) (*template.Template, error) {
	t := template.New(b.name).Option("missingkey=zero").Funcs(fm)
	for _, p := range names {
		if _, err := t.New(p).Parse(b.sources[p]); err != nil {
			return nil, templateError(p, err)
		}
	}
	return t, nil
}

// loadCharts unpacks the chart archives and reads the subcharts.
func (b *Bundle) loadCharts() error {
	var err error
	if b.sources, err = chart.ExpandArchives(b.spec.Files); err != nil {
		return err
	}
	name, _ := b.chart["name"].(string)
	if name == "" {
		name = b.name
	}
	b.root = &chart.Node{Meta: b.chart, Name: name, Defaults: b.defaults, Files: b.files}
	if err := chart.LoadTree(b.root, b.sources); err != nil {
		return err
	}
	if b.root.CountUses(chart.MaxCharts) > chart.MaxCharts {
		return &RenderError{File: ChartFile, Reason: ReasonTooLarge, Msg: fmt.Sprintf("more than %d uses of charts (subcharts and their aliases, at every depth; MaxCharts)", chart.MaxCharts)}
	}
	b.helmNames = chart.HelmNames(b.root, b.sources)
	return nil
}

// revision hashes the files (in path order), the schema and the options,
// the published api, outputs and readiness rules included: a change of
// the kind (its defaults, its columns) or of how the members are read is
// a new revision, so every instance is reconciled again, and a revision
// kept (a BundleRevision) reads its own members as it renders them.
func revision(spec v1alpha1.BundleSpec) string {
	h := sha256.New()
	paths := make([]string, 0, len(spec.Files))
	for p := range spec.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "file %d:%s %d:", len(p), p, len(spec.Files[p]))
		h.Write([]byte(spec.Files[p]))
	}
	if spec.Schema != nil {
		var v any
		if json.Unmarshal(spec.Schema.Raw, &v) == nil {
			canon, _ := json.Marshal(v) // map keys sorted: formatting does not count
			fmt.Fprintf(h, "schema %d:", len(canon))
			h.Write(canon)
		}
	}
	opts, _ := json.Marshal(options{Permissions: spec.Permissions, AllowNondeterministic: spec.AllowNondeterministic, CRDs: spec.CRDs, API: spec.API})
	h.Write(opts)
	if len(spec.Outputs) > 0 || len(spec.Readiness) > 0 {
		// Only when set, so the revisions of Bundles without them stay
		// what they were.
		reads, _ := json.Marshal(options{Outputs: spec.Outputs, Readiness: spec.Readiness})
		h.Write(reads)
	}
	if len(spec.ValuesMigrations) > 0 {
		// Only when set too: they change what a parent renders.
		migrations, _ := json.Marshal(options{ValuesMigrations: spec.ValuesMigrations})
		h.Write(migrations)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Name returns the bundle's name.
func (b *Bundle) Name() string { return b.name }

// Revision returns the content hash of the files, schema and options.
func (b *Bundle) Revision() string { return b.revision }

// Permissions returns what the bundle may create beyond its Composition's
// namespace: its spec.permissions, or what Within narrowed them to.
func (b *Bundle) Permissions() v1alpha1.BundlePermissions { return *b.perms.DeepCopy() }

// CRDPolicy returns what becomes of the bundle's crds/ folders: its
// spec.crds, or what Within narrowed it to ("" is Create).
func (b *Bundle) CRDPolicy() v1alpha1.CRDPolicy { return b.crds }

// Within returns b rendering under perms and crds in place of its own
// policy: the same content (parsed once, the same Revision), but what it
// may create beyond its parent's namespace and what becomes of its crds/
// folders are those given. A revision kept of a Bundle renders within the
// Bundle's current policy that way (see reconcile/revision.Within). The
// caller narrows: Within does not check that perms and crds are within
// b's own.
func (b *Bundle) Within(perms v1alpha1.BundlePermissions, crds v1alpha1.CRDPolicy) *Bundle {
	return &Bundle{content: b.content, perms: *perms.DeepCopy(), crds: crds}
}

// Own returns b rendering under its content's own policy (its
// spec.permissions and spec.crds), whatever Within narrowed.
func (b *Bundle) Own() *Bundle {
	return &Bundle{content: b.content, perms: *b.spec.Permissions.DeepCopy(), crds: b.spec.CRDs}
}

// API returns the kind the bundle publishes (its spec.api), nil when it
// publishes none.
func (b *Bundle) API() *v1alpha1.BundleAPI { return b.spec.API.DeepCopy() }

// Spec returns the bundle's content as a Bundle's spec (for `stencil
// bundle pack`, and the render workers): its own permissions and crds
// policy as written, whatever Within narrowed them to (see Permissions
// and CRDPolicy for those it renders under).
func (b *Bundle) Spec() v1alpha1.BundleSpec { return *b.spec.DeepCopy() }

// MayGenerate reports whether any template of the bundle names one of the
// generators (package templates/generators): a render that cannot call one
// needs no values kept from earlier renders.
func (b *Bundle) MayGenerate() bool {
	b.generatesOnce.Do(func() {
		for name, src := range b.sources {
			if !chart.IsTemplate(name) && !chart.IsHelper(name) {
				continue
			}
			for _, fn := range generators.Functions {
				if strings.Contains(src, fn) {
					b.generates = true
					return
				}
			}
		}
	})
	return b.generates
}
