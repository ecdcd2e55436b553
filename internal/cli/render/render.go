package render

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/pull"
	"github.com/stencil-dev/stencil/internal/cli/session"
)

// renderFlags are render's flags: those it shares with diff, and those
// that make its own Composition or pull its chart.
type renderFlags struct {
	flags.Plan
	// values and name make render's own Composition, without -f.
	values flags.Values
	name   string
	// pull pulls a --bundle that names a chart in a registry.
	pull pull.Flags
	// includeCRDs prints the chart's crds/ CRDs.
	includeCRDs bool
	// notes prints each parent's notes (templates/NOTES.txt) on stderr.
	notes bool
}

// NewCommand returns `stencil render`, with the kubeconfig flags kube.
func NewCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render (-f composition.yaml [--bundle DIR|bundle.yaml|oci://...] | --bundle DIR|bundle.yaml|oci://... [--values FILE] [--set a.b=c] [--name NAME] [-n NAMESPACE])",
		Short: "Print the objects the controller would apply for Compositions and instances of published kinds",
		Long: `render prints, as multi-document YAML, exactly the objects the controller
would apply for each Composition in the file, and for each instance of a
kind a Bundle publishes (such as kind: AppService): same order, same
namespace placement, same ApplySet part-of label. Pipe it into
  kubectl apply --server-side --field-manager=stencil --dry-run=server -f -
to preview the real write. Without --bundle the Bundle is read from the
cluster: a Composition's by its spec.bundle, an instance's as the Bundle
whose spec.api publishes the instance's apiVersion and kind. With --bundle
DIR, an instance's kind must be the one DIR's stencil.yaml api: publishes.
With --bundle and no reachable cluster (or --offline), only built-in kinds
and kinds defined by CRDs in the bundle can be placed.

Without -f, render makes the Composition itself, as helm template makes a
release: named --name, in the namespace of -n (or the kubeconfig's), of
the --bundle, with the values of --values files (merged in order) and
--set / --set-string assignments (applied after them, in order). It is
the plan the controller would apply for a Composition with those values.

A chart in a registry is pulled as the controller pulls a Bundle's
spec.source (digest verified, size bounded, unpacked with the same
confinement): --bundle oci://HOST/PATH:TAG (or @sha256:HEX), or from a
chart repository --repo URL --chart NAME [--version V] (as helm template;
the same as --bundle URL#NAME@V), with --username, --password
($STENCIL_REGISTRY_PASSWORD) and --ca-file. --verify cosign|helm
--verify-key FILE requires its signature (a cosign signature made with
the PEM public key(s) of FILE, or a provenance file signed by the OpenPGP
keyring of FILE), as a Bundle's spec.source.verify does; a Bundle
manifest whose spec.source.verify is set needs --verify-key.

Templates that read their own members' observed values (observed "ID"
"PATH") see, online, the live members of the parent's set, read as you;
offline, nothing is observed: render shows the controller's first pass,
and the objects held back until a value is observed (stencil.dev/wait-for)
are named on stderr, not printed.

--notes prints what each parent's templates/NOTES.txt printed, whole, on
stderr after its objects, as helm install prints a release's notes:
stdout stays the objects alone, so render --notes | kubectl apply -f -
applies them and shows the notes. (The controller records them, at most
4 KiB, in the parent's status.notes.) A failing NOTES.txt fails the
render, with or without --notes, as it fails helm install and the
controller's pass.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), kube, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.Add(cmd.Flags(), true)
	f.values.Add(cmd.Flags(), true)
	cmd.Flags().StringVar(&f.name, "name", "release-name", "without -f: the name of the Composition render makes (.Release.Name)")
	cmd.Flags().BoolVar(&f.includeCRDs, "include-crds", false, "print the CustomResourceDefinitions of the chart's crds/ folders first, as helm template --include-crds (the controller creates them when absent, per the Bundle's spec.crds)")
	cmd.Flags().BoolVar(&f.notes, "notes", false, "print each parent's notes (the chart's templates/NOTES.txt, as helm install prints them) on stderr, after its objects")
	f.pull.Add(cmd.Flags())
	return cmd
}

// connect connects to the cluster unless told not to; with a --bundle, an
// unreachable cluster falls back to offline rendering, with a note.
func (f *renderFlags) connect(kube *genericclioptions.ConfigFlags, stderr io.Writer) (*session.Session, error) {
	if f.Offline {
		if f.Bundle == "" {
			return nil, fmt.Errorf("--offline needs --bundle")
		}
		return session.Offline(kube)
	}
	s, err := session.Connect(kube)
	if err != nil && f.Bundle != "" {
		fmt.Fprintf(stderr, "note: rendering offline: %v\n", err)
		return session.Offline(kube)
	}
	if s != nil {
		s.Notes = stderr
		s.ControllerNamespace = f.ControllerNamespace
	}
	return s, err
}

func run(ctx context.Context, kube *genericclioptions.ConfigFlags, f *renderFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	bundle, err := f.pull.BundleArg(f.Bundle)
	if err != nil {
		return err
	}
	f.Bundle = bundle
	s, err := f.connect(kube, stderr)
	if err != nil {
		return err
	}
	s.Pull = &f.pull
	s.Notes = stderr // offline too: the values migrations a render applies are said there
	docs, err := f.parents(stdin, s.Namespace)
	if err != nil {
		return err
	}
	pool, err := f.Render.Pool()
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, d := range docs {
		parent, b, err := s.Resolve(ctx, f.Bundle, d)
		if err != nil {
			return err
		}
		planned, obs, err := s.PlanObserved(ctx, pool, b, parent)
		if err != nil {
			return err
		}
		for _, h := range obs.Held {
			fmt.Fprintf(stderr, "note: %s: %s held back, waiting for %s\n", parents.Describe(parent), h, strings.Join(h.WaitsFor, ", "))
		}
		objs := planned.Objects
		if f.includeCRDs {
			objs = append(slices.Clone(planned.CRDs), objs...)
		}
		if err := writeYAML(stdout, objs); err != nil {
			return err
		}
		if f.notes && planned.Notes.Text != "" {
			fmt.Fprintf(stderr, "NOTES (%s):\n%s\n", parents.Describe(parent), planned.Notes.Text)
		}
	}
	return nil
}

// parents returns the parents to render: those of -f, or, without it, the
// one Composition the values flags and --name make, of the --bundle.
func (f *renderFlags) parents(stdin io.Reader, namespace string) ([]parents.Document, error) {
	switch {
	case f.File != "" && f.values.Given():
		return nil, fmt.Errorf("--values, --set and --set-string make a Composition of their own: give them without -f (a -f file's parents carry their own values)")
	case f.File != "":
		return parents.Read(f.File, stdin, namespace)
	case f.Bundle == "":
		return nil, fmt.Errorf("give -f with Compositions or instances to render, or --bundle (with --values, --set) to render one Composition of it")
	}
	bundle, err := session.BundleNameAt(f.Bundle)
	if err != nil {
		return nil, err
	}
	values, err := f.values.Merged()
	if err != nil {
		return nil, err
	}
	comp := &v1alpha1.Composition{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Composition"},
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: namespace},
		Spec:       v1alpha1.CompositionSpec{Bundle: bundle},
	}
	if values != nil {
		raw, err := json.Marshal(values)
		if err != nil {
			return nil, err
		}
		comp.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
	if errs := validation.IsDNS1123Subdomain(f.name); len(errs) > 0 {
		return nil, fmt.Errorf("--name %q: %s", f.name, strings.Join(errs, "; "))
	}
	return []parents.Document{{Composition: comp}}, nil
}

// writeYAML writes objects as a multi-document YAML stream.
func writeYAML(w io.Writer, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}
