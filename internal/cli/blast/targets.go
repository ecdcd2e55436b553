package blast

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/cli/parents"
	"github.com/stencil-dev/stencil/internal/cli/session"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// target is one parent a Bundle change reaches: a Composition naming the
// Bundle, or an instance of a kind it publishes.
type target struct {
	parent applyset.Parent
	// kind is the parent's kind, as the summary counts it.
	kind string
	// leftAlone says why the controller would leave the instance alone
	// under the new version (it no longer publishes the instance's kind);
	// nothing is rendered then.
	leftAlone string
	// specErr is an instance's stencil.dev/* annotation the controller
	// cannot read: it would stall the instance.
	specErr error
	// served is the instance at the version the cluster serves, when
	// parent is it at the new version's: what its members are listed by.
	served applyset.Parent
	// shard, wave and waves place the parent in the rollout of the new
	// version (see wavePlan); pin is its pin when it stands (wave 0).
	shard       string
	wave, waves int
	pin         string
	// unordered: the parent moves in one of the batches, which of them
	// only the controller's key says (see wavePlan).
	unordered bool
}

// name is the parent as the output names it: "team-a/shop".
func (t target) name() string { return t.parent.GetNamespace() + "/" + t.parent.GetName() }

// scope narrows the parents a Bundle change is shown for.
type scope struct {
	namespace string // "" for every namespace
	selector  labels.Selector
}

func (sc scope) listOptions() []client.ListOption {
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sc.selector}}
	if sc.namespace != "" {
		opts = append(opts, client.InNamespace(sc.namespace))
	}
	return opts
}

// findTargets lists, sorted by namespace, name and kind, the parents a new
// version of Bundle name reaches: the Compositions whose spec.bundle names
// it, and the instances of the kind it publishes, both the kind newAPI
// names and the one the cluster's Bundle (clusterAPI) publishes today.
// Parents being deleted are left out: the controller only finalizes them.
func findTargets(ctx context.Context, s *session.Session, name string, newAPI, clusterAPI *v1alpha1.BundleAPI, sc scope) ([]target, error) {
	var comps v1alpha1.CompositionList
	if err := s.Client.List(ctx, &comps, sc.listOptions()...); err != nil {
		return nil, fmt.Errorf("list Compositions: %w", err)
	}
	var out []target
	for i := range comps.Items {
		c := &comps.Items[i]
		if c.Spec.Bundle == name && c.DeletionTimestamp.IsZero() {
			out = append(out, target{parent: c, kind: "Composition"})
		}
	}
	for _, api := range publishedAPIs(clusterAPI, newAPI) {
		found, err := findInstances(ctx, s, name, api, newAPI, sc)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	slices.SortFunc(out, func(a, b target) int {
		return cmp.Or(cmp.Compare(a.parent.GetNamespace(), b.parent.GetNamespace()),
			cmp.Compare(a.parent.GetName(), b.parent.GetName()), cmp.Compare(a.kind, b.kind))
	})
	return out, nil
}

// publishedAPIs are the kinds whose instances a Bundle change reaches:
// the cluster version's and the new version's, once each by group and
// kind (a new version of the same kind is listed at the version served
// now: the first).
func publishedAPIs(apis ...*v1alpha1.BundleAPI) []v1alpha1.BundleAPI {
	var out []v1alpha1.BundleAPI
	for _, api := range apis {
		if api != nil && !slices.ContainsFunc(out, func(o v1alpha1.BundleAPI) bool {
			return publish.GVK(o).GroupKind() == publish.GVK(*api).GroupKind()
		}) {
			out = append(out, *api)
		}
	}
	return out
}

// findInstances lists the instances of api's kind that Bundle name
// serves. A kind not served (yet) has none; a kind whose CRD is not kept
// for name (another Bundle's, or not stencil's) is not name's to serve (the
// controller would refuse the new version the kind), so it is left out
// with a note.
func findInstances(ctx context.Context, s *session.Session, name string, api v1alpha1.BundleAPI, newAPI *v1alpha1.BundleAPI, sc scope) ([]target, error) {
	gvk := publish.GVK(api)
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	switch err := s.Client.Get(ctx, client.ObjectKey{Name: publish.CRDName(api)}, crd); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the CustomResourceDefinition of %s: %w", parents.KindString(gvk), err)
	case crd.Labels[publish.LabelBundle] != name:
		keeper := "is not stencil's"
		if b := crd.Labels[publish.LabelBundle]; b != "" {
			keeper = "is kept for Bundle " + b
		}
		fmt.Fprintf(s.Notes, "note: the CustomResourceDefinition of %s %s: its instances are not Bundle %s's, and are not counted\n", parents.KindString(gvk), keeper, name)
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	switch err := s.Client.List(ctx, list, sc.listOptions()...); {
	case meta.IsNoMatchError(err):
		return nil, nil // the CRD does not serve this version
	case err != nil:
		return nil, fmt.Errorf("list %s: %w", parents.KindString(gvk), err)
	}
	var out []target
	for i := range list.Items {
		u := &list.Items[i]
		if !u.GetDeletionTimestamp().IsZero() {
			continue
		}
		out = append(out, instanceTarget(name, u, newAPI))
	}
	return out, nil
}

// instanceTarget is instance u of a kind Bundle name publishes today or
// in its new version newAPI. When the new version publishes another
// version of u's kind, u is rendered at that version, as the kind's
// controller will serve it; when it publishes no longer u's kind, the
// controller leaves u alone.
func instanceTarget(name string, u *unstructured.Unstructured, newAPI *v1alpha1.BundleAPI) target {
	gvk := u.GroupVersionKind()
	t := target{kind: gvk.Kind}
	if newAPI == nil || publish.GVK(*newAPI).GroupKind() != gvk.GroupKind() {
		spec, _ := publish.InstanceSpec(name, nil, u)
		t.parent = applyset.NewInstance(u, spec)
		t.leftAlone = fmt.Sprintf("the new version of Bundle %s does not publish %s: the controller leaves the instance and its children as they are", name, parents.KindString(gvk))
		return t
	}
	spec, err := publish.InstanceSpec(name, newAPI, u)
	if publish.GVK(*newAPI) != gvk {
		t.served = applyset.NewInstance(u.DeepCopy(), spec)
		u.SetGroupVersionKind(publish.GVK(*newAPI))
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // without the "AppService ns/name: " the header says already
	}
	t.parent, t.specErr = applyset.NewInstance(u, spec), err
	return t
}
