package cluster

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/templates"
)

// APIs answers what planning asks of the cluster about kinds (see
// plan.APIs): which kinds are served and with which scope (its
// RESTMapper), which are built in, what serves an API group besides
// CustomResourceDefinitions, and which set a CustomResourceDefinition
// belongs to. Online it reads discovery (the RESTMapper), the
// APIServices and the CustomResourceDefinitions' metadata live; offline
// (OfflineAPIs) it knows the built-in list and stencil's own kinds, and
// no CustomResourceDefinition exists.
type APIs struct {
	meta.RESTMapper
	// reader reads APIServices and CustomResourceDefinitions from the API
	// server; nil offline.
	reader client.Reader
}

// NewAPIs answers from the cluster: mapper is the discovery-backed
// RESTMapper, reader reads from the API server (not a cache, so a CRD
// made a moment ago is seen).
func NewAPIs(mapper meta.RESTMapper, reader client.Reader) *APIs {
	return &APIs{RESTMapper: mapper, reader: reader}
}

// OfflineAPIs answers without a cluster, from OfflineRESTMapper.
func OfflineAPIs() *APIs { return &APIs{RESTMapper: OfflineRESTMapper()} }

// builtinKinds and builtinGroups are the group-kinds and the API groups
// the API server of templates.BuiltinKubeVersion serves by itself.
var builtinKinds = sync.OnceValues(func() (map[schema.GroupKind]bool, map[string]bool) {
	kinds, groups := map[schema.GroupKind]bool{}, map[string]bool{}
	for _, r := range templates.BuiltinResources() {
		kinds[schema.GroupKind{Group: r.Group, Kind: r.Kind}] = true
		groups[r.Group] = true
	}
	return kinds, groups
})

// BuiltIn says whether the API server serves gk by itself (the built-in
// list of templates.BuiltinKubeVersion).
func (a *APIs) BuiltIn(gk schema.GroupKind) bool {
	kinds, _ := builtinKinds()
	return kinds[gk]
}

// ReservedGroup says why stencil may not create the CRD of a kind a
// Bundle publishes in group, or "" when it may: the group is Kubernetes'
// own (k8s.io, kubernetes.io and their subdomains: only a cluster admin
// opts a Bundle in there, see package reconcile/published), or
// ServedGroup says what serves it. A CRD a Bundle renders is not held to
// the first rule (see plan.APIs).
func (a *APIs) ReservedGroup(ctx context.Context, group string) (string, error) {
	if publish.ReservedGroup(group) {
		return KubernetesOwn, nil
	}
	return a.ServedGroup(ctx, group)
}

// KubernetesOwn is ReservedGroup's reason for a group of Kubernetes' own.
const KubernetesOwn = "Kubernetes' own (k8s.io, kubernetes.io)"

// LabelAutoRegistered is the label the API server's aggregator puts on
// the APIServices it registers for local groups: "true" on those it
// keeps for the groups that CustomResourceDefinitions serve, "onstart"
// on those of the API server's own groups.
const LabelAutoRegistered = "kube-aggregator.kubernetes.io/automanaged"

// ServedGroup says what, besides CustomResourceDefinitions, serves
// group, or "": the API server itself (a group of the built-in list, or
// one the cluster's APIServices say it serves: a local APIService, with
// no service, that the aggregator did not register for CRDs), stencil
// (its own group), or an aggregated API server (an APIService with a
// service). Offline only the built-in list and stencil's group are
// known.
func (a *APIs) ServedGroup(ctx context.Context, group string) (string, error) {
	_, groups := builtinKinds()
	switch {
	case groups[group]:
		return "served by the API server itself", nil
	case group == v1alpha1.GroupVersion.Group:
		return "stencil's own", nil
	case a.reader == nil:
		return "", nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIServiceList"})
	if err := a.reader.List(ctx, list); err != nil {
		return "", fmt.Errorf("list APIServices: %w", err)
	}
	for _, s := range list.Items {
		if g, _, _ := unstructured.NestedString(s.Object, "spec", "group"); g != group {
			continue
		}
		svc, _, _ := unstructured.NestedMap(s.Object, "spec", "service")
		switch {
		case svc != nil:
			return "served by an aggregated API server (APIService " + s.GetName() + ")", nil
		case s.GetLabels()[LabelAutoRegistered] != "true":
			return "served by the API server itself (APIService " + s.GetName() + ", not registered for a CustomResourceDefinition)", nil
		}
	}
	return "", nil
}

// CRD returns the labels of the CustomResourceDefinition named name, and
// whether it exists. Offline none exists.
func (a *APIs) CRD(ctx context.Context, name string) (map[string]string, bool, error) {
	if a.reader == nil {
		return nil, false, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	switch err := a.reader.Get(ctx, client.ObjectKey{Name: name}, m); {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
	}
	return m.GetLabels(), true, nil
}
