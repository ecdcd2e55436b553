package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/flags"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/observed"
)

// planFlags are the flags shared by render and diff.
type planFlags struct {
	file    string
	bundle  string
	offline bool
	render  flags.Render
	// values and name make render's own Composition, without -f.
	values flags.Values
	name   string
	// pull pulls a --bundle that names a chart in a registry (render).
	pull pullFlags
	// includeCRDs prints the chart's crds/ CRDs (render).
	includeCRDs bool
	// controllerNamespace is the controller's namespace, where its key
	// for generated values is (reconcile/valuestore).
	controllerNamespace string
}

func (f *planFlags) add(cmd *cobra.Command, offline bool) {
	cmd.Flags().StringVarP(&f.file, "filename", "f", "", "file holding one or more Compositions or instances of published kinds (- for stdin)")
	cmd.Flags().StringVar(&f.bundle, "bundle", "", "bundle folder, Bundle manifest or chart (oci://HOST/PATH:TAG, oci://HOST/PATH@sha256:HEX, https://REPO#CHART[@VERSION]) to render instead of the cluster's Bundle (for an instance, it must publish the instance's kind)")
	if offline {
		cmd.Flags().BoolVar(&f.offline, "offline", false, "do not contact a cluster (needs --bundle; only built-in kinds and CRDs in the bundle)")
	}
	f.render.Add(cmd.Flags())
	cmd.Flags().StringVar(&f.controllerNamespace, "controller-namespace", reconcile.DefaultNamespace, "the controller's namespace: where it keeps the key of the generated values it keeps and, for diff --bundle, the order of a rollout in waves ("+rollout.OrderSecret+"), read as you when you may")
}

func newRenderCommand(kube *genericclioptions.ConfigFlags) *cobra.Command {
	f := &planFlags{}
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
are named on stderr, not printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.Context(), kube, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.add(cmd, true)
	f.values.Add(cmd.Flags(), true)
	cmd.Flags().StringVar(&f.name, "name", "release-name", "without -f: the name of the Composition render makes (.Release.Name)")
	cmd.Flags().BoolVar(&f.includeCRDs, "include-crds", false, "print the CustomResourceDefinitions of the chart's crds/ folders first, as helm template --include-crds (the controller creates them when absent, per the Bundle's spec.crds)")
	f.pull.add(cmd.Flags())
	return cmd
}

// session connects to the cluster unless told not to; with a --bundle, an
// unreachable cluster falls back to offline rendering, with a note.
func (f *planFlags) session(kube *genericclioptions.ConfigFlags, stderr io.Writer) (*session, error) {
	if f.offline {
		if f.bundle == "" {
			return nil, fmt.Errorf("--offline needs --bundle")
		}
		return offline(kube)
	}
	s, err := connect(kube)
	if err != nil && f.bundle != "" {
		fmt.Fprintf(stderr, "note: rendering offline: %v\n", err)
		return offline(kube)
	}
	if s != nil {
		s.notes = stderr
		s.controllerNamespace = f.controllerNamespace
	}
	return s, err
}

func runRender(ctx context.Context, kube *genericclioptions.ConfigFlags, f *planFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	bundle, err := f.pull.bundleArg(f.bundle)
	if err != nil {
		return err
	}
	f.bundle = bundle
	s, err := f.session(kube, stderr)
	if err != nil {
		return err
	}
	s.pull = &f.pull
	docs, err := f.parents(stdin, s.namespace)
	if err != nil {
		return err
	}
	pool, err := f.render.Pool()
	if err != nil {
		return err
	}
	defer pool.Close()
	for _, d := range docs {
		parent, b, err := resolve(ctx, s, f.bundle, d)
		if err != nil {
			return err
		}
		planned, obs, err := planObserved(ctx, s, pool, b, parent)
		if err != nil {
			return err
		}
		for _, h := range obs.Held {
			fmt.Fprintf(stderr, "note: %s: %s held back, waiting for %s\n", describeParent(parent), h, strings.Join(h.WaitsFor, ", "))
		}
		objs := planned.Objects
		if f.includeCRDs {
			objs = append(slices.Clone(planned.CRDs), objs...)
		}
		if err := writeYAML(stdout, objs); err != nil {
			return err
		}
	}
	return nil
}

// parents returns the parents to render: those of -f, or, without it, the
// one Composition the values flags and --name make, of the --bundle.
func (f *planFlags) parents(stdin io.Reader, namespace string) ([]document, error) {
	switch {
	case f.file != "" && f.values.Given():
		return nil, fmt.Errorf("--values, --set and --set-string make a Composition of their own: give them without -f (a -f file's parents carry their own values)")
	case f.file != "":
		return readParents(f.file, stdin, namespace)
	case f.bundle == "":
		return nil, fmt.Errorf("give -f with Compositions or instances to render, or --bundle (with --values, --set) to render one Composition of it")
	}
	bundle, err := bundleNameAt(f.bundle)
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
	return []document{{comp: comp}}, nil
}

// planParent renders one parent (a Composition or an instance of a published
// kind) with the controller's own planning, in the same sandbox as the
// controller (see planObserved).
func planParent(ctx context.Context, s *session, r plan.Renderer, b *templates.Bundle, p applyset.Parent) (*plan.Plan, error) {
	pl, obs, err := planObserved(ctx, s, r, b, p)
	if err != nil {
		return nil, err
	}
	// The Secrets keeping the generated values in the namespaces they end
	// up in are members the controller applies beside the chart's
	// (package valuestore): part of the plan diff compares, though render
	// does not print them. The controller's own store is not: only the
	// controller writes it.
	if obs.stores != nil {
		if err := obs.stores.Place(pl, obs.Generated); err != nil {
			return nil, fmt.Errorf("%s: %w", describeParent(p), err)
		}
	}
	return pl, nil
}

// observations are what a render observed (templates.Observations) and
// the stores of generated values it was given (nil: none read).
type observations struct {
	templates.Observations
	stores *valuestore.Stores
}

// planObserved is planParent without the store of generated values, with
// what the render observed: the objects it held back, what it valuestore.
// Offline it is the controller's first pass: no member is observed, and
// what waits for a member's value is held back. Online the templates
// observe the parent's live members, read as the user (see
// session.observe): what the controller would apply now.
func planObserved(ctx context.Context, s *session, r plan.Renderer, b *templates.Bundle, p applyset.Parent) (*plan.Plan, observations, error) {
	in, err := s.renderInput(ctx, p)
	if err != nil {
		return nil, observations{}, fmt.Errorf("%s: %w", describeParent(p), err)
	}
	var answer plan.Answer
	var stores *valuestore.Stores
	observe := s.observe(nil)
	if s.client != nil {
		answer = s.answer
		// What the controller takes for the set's own members: a user
		// who may not read the parent sees none observed, none kept.
		rec, err := s.recordOf(ctx, p)
		if err != nil && !apierrors.IsForbidden(err) {
			return nil, observations{}, fmt.Errorf("%s: %w", describeParent(p), err)
		}
		observe = s.observe(rec)
		if b.MayGenerate() {
			if stores, err = s.kept(ctx, p, rec); err != nil {
				return nil, observations{}, fmt.Errorf("%s: %w", describeParent(p), err)
			}
			in.Generated, in.GeneratedKey = stores.Values(), stores.SetKey()
		}
	}
	pl, obs, err := plan.NewObservedPlan(ctx, r, b, in, s.apis, observe, answer)
	if err != nil {
		return nil, observations{}, fmt.Errorf("%s: %w", describeParent(p), err)
	}
	return pl, observations{Observations: obs, stores: stores}, nil
}

// kept reads, live and as the user, the stores of the values the
// controller keeps of what p's templates generated (package
// reconcile/valuestore) and the controller's key, so a render shows the
// passwords and certificates the cluster holds, not new ones. A store
// the user may not read is left out, as is one the set's record rec
// does not name (a store the controller would not read), and without the key (a user who
// may not read it: only the controller and cluster admins should) no
// value kept under a keyed digest is found: those values are new ones
// in the render, as on a first install, and a note says so.
func (s *session) kept(ctx context.Context, p applyset.Parent, rec *applyset.Record) (*valuestore.Stores, error) {
	ns := s.controllerNamespace
	if ns == "" {
		ns = reconcile.DefaultNamespace
	}
	src := valuestore.Source{SetID: applyset.ParentID(p), ParentNamespace: p.GetNamespace(), Namespaces: []string{p.GetNamespace()},
		Tenant: s.client, ControllerNamespace: ns, Controller: s.client, SkipForbidden: true, Record: rec}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(p.ParentGVK())
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(p), live); err == nil {
		src.Namespaces = append(src.Namespaces, applyset.ParseInventory(live.GetAnnotations()).Namespaces...)
	}
	secret := &corev1.Secret{}
	err := s.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: valuestore.KeySecretName}, secret)
	switch {
	case err == nil:
		key, kerr := valuestore.NewKey(secret.Data[valuestore.KeyField])
		if kerr != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", ns, valuestore.KeySecretName, kerr)
		}
		src.Key = &key
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		if !s.keyNoted {
			fmt.Fprintf(s.notes, "note: the controller's key for generated values (Secret %s/%s) cannot be read as you: generated values are shown as new ones, not those the cluster keeps\n", ns, valuestore.KeySecretName)
			s.keyNoted = true
		}
	default:
		return nil, fmt.Errorf("read Secret %s/%s: %w", ns, valuestore.KeySecretName, err)
	}
	return valuestore.Read(ctx, src)
}

// recordOf is the record of p's members (applyset.RecordOf) as the
// cluster holds it: what the controller takes for the set's own. A parent
// listed from the cluster carries it in its status; one from a file (no
// status) is read live, as the user. A parent the cluster does not hold
// has no member yet.
func (s *session) recordOf(ctx context.Context, p applyset.Parent) (*applyset.Record, error) {
	if !equality.Semantic.DeepEqual(*p.ParentStatus(), v1alpha1.CompositionStatus{}) {
		return applyset.RecordOf(p), nil
	}
	live, err := applyset.Reread(ctx, s.client, p)
	switch {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return applyset.NewRecord(nil, nil), nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", describeParent(p), err)
	}
	return applyset.RecordOf(live), nil
}

// answer answers a render's lookups live and as the user (Helm's lookup:
// the object, or the list of a kind, or nothing). Offline there is no
// answer: every lookup is empty, as in `helm template`. The controller
// answers as the parent's ServiceAccount, which may read more or less
// than the user: the render shows what the user may read.
func (s *session) answer(ctx context.Context, reads []lookup.Read) (lookup.Table, error) {
	table := make(lookup.Table, len(reads))
	for _, r := range reads {
		gv, err := schema.ParseGroupVersion(r.Key.APIVersion)
		if err != nil {
			table[r.Key.String()] = nil
			continue
		}
		gvk := gv.WithKind(r.Key.Kind)
		var obj map[string]any
		if r.Key.List() {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gv.WithKind(r.Key.Kind + "List"))
			var opts []client.ListOption
			if r.Key.Namespace != "" {
				opts = append(opts, client.InNamespace(r.Key.Namespace))
			}
			if err := s.client.List(ctx, list, opts...); err == nil && len(list.Items) > 0 {
				items := make([]any, len(list.Items))
				for i := range list.Items {
					list.Items[i].SetManagedFields(nil)
					items[i] = list.Items[i].Object
				}
				obj = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
			}
		} else {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := s.client.Get(ctx, client.ObjectKey{Namespace: r.Key.Namespace, Name: r.Key.Name}, u); err == nil {
				u.SetManagedFields(nil)
				obj = u.Object
			}
		}
		table[r.Key.String()] = obj
	}
	return table, nil
}

// observe reads, live and as the user, the members of plan pl that ids
// name: only objects of the plan, and only the set's members by its
// record rec (plan.ObservedView), as the controller gives its templates.
// Offline nothing is observed. A member the user may not read, or that
// does not exist, is not observed.
func (s *session) observe(rec *applyset.Record) plan.Observe {
	return func(ctx context.Context, pl *plan.Plan, _ []observed.HeldObject, ids []string) map[string]map[string]any {
		if s.client == nil {
			return nil
		}
		addressed := pl.Addressed()
		var out map[string]map[string]any
		for _, id := range ids {
			o, ok := addressed[id]
			if !ok {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			if err := s.client.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				continue
			}
			if v := plan.ObservedView(u, pl.ID, rec); v != nil {
				if out == nil {
					out = map[string]map[string]any{}
				}
				out[id] = v
			}
		}
		return out
	}
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
