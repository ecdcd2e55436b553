package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	"github.com/spf13/cobra"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/templates"
)

type lintFlags struct {
	values  []string
	offline bool
	render  flags.Render
	// sets holds --set and --set-string, applied over every case's values.
	sets flags.Values
}

func newLintCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &lintFlags{}
	cmd := &cobra.Command{
		Use:   "lint DIR [-f values.yaml ...]",
		Short: "Render a bundle with its defaults and each values file, and validate every object",
		Long: `lint renders the bundle as a Composition would (with the bundle's defaults,
then with each values file; --set and --set-string apply over each), then
validates every object: against the API
server's schema with a server-side dry-run apply when a cluster is
reachable, and otherwise offline against the built-in kinds' schemas (so a
misspelled field in a Deployment is caught). When the bundle publishes a
kind (api: in stencil.yaml), lint also builds the kind's
CustomResourceDefinition and checks it as the API server would: the api
itself, and that the values schema is structural, with valid defaults and
CEL rules, and a -f file may be an instance of that kind (its spec is the
values). Every problem is printed with its location; the exit status is
1 when there is any. A .Values path a template reads that neither
values.yaml sets nor the bundle's schema declares is a warning on stderr,
with file and line (a misspelling renders an empty string), not a problem.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			problems, err := runLint(cmd.Context(), kube, f, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if problems > 0 {
				return &exit.Error{Code: 1, Err: fmt.Errorf("%d problem(s) found", problems)}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&f.values, "values", "f", nil, "values file to lint with (repeatable)")
	f.sets.Add(cmd.Flags(), false)
	cmd.Flags().BoolVar(&f.offline, "offline", false, "validate offline even when a cluster is reachable")
	f.render.Add(cmd.Flags())
	return cmd
}

// runLint lints the bundle folder dir and returns the number of problems
// it printed to out; an error is one that stops the lint itself.
func runLint(ctx context.Context, kube *genericclioptions.ConfigFlags, f *lintFlags, dir string, out, stderr io.Writer) (int, error) {
	s, err := lintSession(kube, f.offline, stderr)
	if err != nil {
		return 0, err
	}
	name := session.BundleName(dir)
	b, err := session.LoadFolder(dir, name)
	if err != nil {
		fmt.Fprintf(out, "%s: %v\n", dir, err)
		return 1, nil
	}
	if hint := openAPIHint(b.Spec().Files[templates.SchemaFileJSON]); hint != "" {
		fmt.Fprintf(stderr, "note: %s: %s\n", templates.SchemaFileJSON, hint)
	}
	problems, err := lintOptions(dir, b, out)
	if err != nil {
		return 0, err
	}
	problems += lintRoundTrips(dir, b, f.values, out)
	lintValuesMigrations(dir, b, stderr)
	lintUndeclaredValues(dir, b, stderr)
	cases, err := lintCases(f, b)
	if err != nil {
		return 0, err
	}
	n, err := lintRenders(ctx, s, &f.render, dir, b, cases, out)
	if err != nil {
		return 0, err
	}
	return problems + n, nil
}

// lintSession connects to the cluster unless offline is set, and falls
// back to an offline session (with a note on stderr) when it cannot.
func lintSession(kube *genericclioptions.ConfigFlags, offline bool, stderr io.Writer) (*session.Session, error) {
	var s *session.Session
	var err error
	if !offline {
		if s, err = session.Connect(kube); err != nil {
			fmt.Fprintf(stderr, "note: validating offline: %v\n", err)
		}
	}
	if s == nil {
		if s, err = session.Offline(kube); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// lintOptions prints the problems of what stencil.yaml declares besides
// templates (the published kind, the outputs, the rollout gates) and
// returns their number.
func lintOptions(dir string, b *templates.Bundle, out io.Writer) (int, error) {
	problems := lintAPI(dir, b, out)
	if _, err := outputs.FromBundle(outputs.New, b.Spec()); err != nil {
		var ce *outputs.CompileError
		if !errors.As(err, &ce) {
			return 0, err
		}
		for _, p := range ce.Problems {
			fmt.Fprintf(out, "%s: %s: %s\n", dir, templates.OptionsFile, p)
		}
		problems += len(ce.Problems)
	}
	if r := b.Spec().Rollout; r != nil {
		// As the Bundles' admission refuses them.
		if _, err := rollout.CompileGates(r.Gates); err != nil {
			fmt.Fprintf(out, "%s: %s: %v\n", dir, templates.OptionsFile, err)
			problems++
		}
	}
	return problems, nil
}

// lintCase is one set of values the bundle is rendered with.
type lintCase struct {
	label  string
	values *apiextensionsv1.JSON
}

// lintCases lists the values to render with: the bundle's defaults, then
// each -f file (an instance of the published kind gives its spec, in the
// render version),
// every one with --set applied over it when given.
func lintCases(f *lintFlags, b *templates.Bundle) ([]lintCase, error) {
	cases := []lintCase{{label: "defaults"}}
	for _, path := range f.values {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		values, err := instanceValues(b, js)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		cases = append(cases, lintCase{path, &apiextensionsv1.JSON{Raw: values}})
	}
	if f.sets.Given() {
		for i := range cases {
			var err error
			if cases[i].values, err = withSets(&f.sets, cases[i].values); err != nil {
				return nil, err
			}
			cases[i].label += " with --set"
		}
	}
	return cases, nil
}

// lintRenders renders the bundle with each case's values, validates the
// objects, prints every problem (or that the objects are ok) and returns
// the number of problems.
func lintRenders(ctx context.Context, s *session.Session, render *flags.Render, dir string, b *templates.Bundle, cases []lintCase, out io.Writer) (int, error) {
	pool, err := render.Pool()
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	problems := 0
	for _, c := range cases {
		parent, err := lintParent(b, s.Namespace, c.values)
		if err != nil {
			return 0, err
		}
		caps, err := s.Capabilities(ctx)
		if err != nil {
			return 0, err
		}
		p, err := plan.NewPlan(ctx, pool, b, plan.RenderInput(parent, nil, caps), s.APIs)
		if err != nil {
			fmt.Fprintf(out, "%s (%s): %v\n", dir, c.label, err)
			problems++
			continue
		}
		n := validate(ctx, s, p, func(msg string) { fmt.Fprintf(out, "%s (%s): %s\n", dir, c.label, msg) })
		if n == 0 {
			fmt.Fprintf(out, "%s (%s): %d objects ok\n", dir, c.label, len(p.Objects))
		}
		problems += n
	}
	return problems, nil
}

// withSets returns values with the --set and --set-string assignments of
// v applied over them.
func withSets(v *flags.Values, values *apiextensionsv1.JSON) (*apiextensionsv1.JSON, error) {
	m := map[string]any{}
	if values != nil {
		if err := json.Unmarshal(values.Raw, &m); err != nil {
			return nil, err
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	if err := v.Apply(m); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

// openAPIKeywords are keywords of an OpenAPI v3 (CRD) schema that JSON
// Schema does not know: a values.schema.json using them was most likely
// written for stencil before values.schema.json meant JSON Schema.
var openAPIKeywords = []string{`"x-kubernetes-`, `"nullable"`}

// openAPIHint says, for a values.schema.json that looks like an OpenAPI v3
// schema, that it is read as JSON Schema (its defaults unapplied) and
// where an OpenAPI v3 schema goes; "" otherwise.
func openAPIHint(schema string) string {
	for _, k := range openAPIKeywords {
		if strings.Contains(schema, k) {
			return fmt.Sprintf("it uses %s, an OpenAPI v3 keyword, but is read as a JSON Schema, as Helm reads it (its defaults are not applied); move an OpenAPI v3 schema to %s", strings.Trim(k, `"`)+"…", templates.SchemaFileYAML)
		}
	}
	return ""
}

// validate checks every planned object and reports each problem; it
// returns how many there were.
func validate(ctx context.Context, s *session.Session, p *plan.Plan, report func(string)) int {
	problems := 0
	// The chart's crds/ CRDs are no dry run's; offline no object is.
	crds := p.CRDs
	if s.Client == nil {
		crds = append(slices.Clone(p.CRDs), p.Objects...)
	}
	for _, u := range crds {
		if msg := unapproved(u); msg != "" {
			report(msg)
			problems++
		}
	}
	if s.Client != nil {
		// Lint checks the objects, not who owns what is live: a lint
		// parent adopts nothing, and ownership refusals are not problems.
		for _, pv := range applyset.DryRun(ctx, s.Client, p.ID, nil, applyset.Consent{}, p.Objects) {
			var foreign *applyset.ForeignMemberError
			var refused *applyset.AdoptionRefusedError
			if pv.Err != nil && !errors.As(pv.Err, &foreign) && !errors.As(pv.Err, &refused) {
				report(pv.Err.Error())
				problems++
			}
		}
		return problems
	}
	strict := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s.Scheme, s.Scheme, jsonserializer.SerializerOptions{Strict: true})
	for _, o := range p.Objects {
		gvk := o.GroupVersionKind()
		if !s.Scheme.Recognizes(gvk) {
			report(fmt.Sprintf("%s %s: not validated offline (not a built-in kind)", gvk.Kind, o.GetName()))
			continue
		}
		data, err := o.MarshalJSON()
		if err == nil {
			_, _, err = strict.Decode(data, &gvk, nil)
		}
		if err != nil {
			report(fmt.Sprintf("%s %s: %v", gvk.Kind, o.GetName(), err))
			problems++
		}
	}
	return problems
}

// unapproved says why the API server would refuse to create u, a
// CustomResourceDefinition in a group of Kubernetes' own, for its
// approval annotation (api-approved.kubernetes.io: missing, or neither a
// URL nor a reason starting with "unapproved"), in the API server's
// words; "" for any other object. A CRD "unapproved" is created, with
// the condition KubernetesAPIApprovalPolicyConformant False.
func unapproved(u *unstructured.Unstructured) string {
	if u.GetKind() != "CustomResourceDefinition" || u.GroupVersionKind().Group != apiextensionsv1.GroupName {
		return ""
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	if !apihelpers.IsProtectedCommunityGroup(group) {
		return ""
	}
	switch state, reason := apihelpers.GetAPIApprovalState(u.GetAnnotations()); state {
	case apihelpers.APIApproved, apihelpers.APIApprovalBypassed:
		return ""
	default:
		return fmt.Sprintf("CustomResourceDefinition %s: metadata.annotations[%s]: %s (the API server refuses to create it)", u.GetName(), apiextensionsv1.KubeAPIApprovedAnnotation, reason)
	}
}
