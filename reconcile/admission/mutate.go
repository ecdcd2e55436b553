package admission

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// The mutating admission webhook: where the controller serves it and the
// MutatingWebhookConfiguration that sends it requests.
const (
	// MutatePath is the path of the mutating handler on the controller's
	// webhook server.
	MutatePath = "/mutate-stencil"
	// DefaultMutatingConfigName is the name of the
	// MutatingWebhookConfiguration (config/webhook).
	DefaultMutatingConfigName = "stencil-mutating"
)

// The rotator injects the CA into the mutating configuration and, for a
// controller outside the cluster, the loopback points it at the controller.
// It writes that configuration only, by name (RBAC resourceNames).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,resourceNames=stencil-mutating,verbs=update;patch

// mutator gives a parent, as it is created or as an update changes what
// it renders, the ApplySet metadata the controller's first pass would
// write before applying anything (reconcile's widen): the ApplySet id
// label, the tooling annotation, the contains-group-kinds and
// additional-namespaces annotations naming what its render holds (with
// what the request's annotations already name: it only widens), and, on
// create, stencil's finalizer. The controller's pass then finds them in
// place and makes no write of the parent before its members (issue 23).
//
// It renders as the validating review does (reviewer.plan: the
// controller's bundle cache, served APIs and the admission renderer; no
// identity is needed, since nothing is written and a render reads only
// the Bundle and the served APIs) and never denies: whatever it cannot
// decide (no Bundle, a failed render, a deadline) is allowed unchanged,
// and the controller writes the metadata itself, as it does when the
// webhook is absent (failurePolicy Ignore) or its render disagrees with
// the pass's. The patch tells the kinds and namespaces of the render, so
// only a caller whose client certificate verifies (the API server, see
// authn.go) gets one.
type mutator struct {
	rv      *reviewer
	version string
}

var _ admission.Handler = (*mutator)(nil)

// Handle returns the patch that sets the parent's ApplySet metadata, or
// allows the request unchanged.
func (m *mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || !callerAuthenticated(ctx) {
		return admission.Allowed("")
	}
	ctx, cancel := context.WithTimeout(ctx, m.rv.timeout)
	defer cancel()
	patched, ok := m.mutate(ctx, req)
	if !ok || ctx.Err() != nil {
		return admission.Allowed("")
	}
	raw, err := json.Marshal(patched.Object)
	if err != nil {
		return admission.Allowed("")
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// mutate returns the request's object with its ApplySet metadata, and
// whether that changed anything.
func (m *mutator) mutate(ctx context.Context, req admission.Request) (*unstructured.Unstructured, bool) {
	obj, err := decodeObject(req.Object.Raw)
	// A name generated later (generateName) is not the one the id and
	// the render would use.
	if err != nil || obj.GetDeletionTimestamp() != nil || obj.GetName() == "" || obj.GetNamespace() == "" {
		return nil, false
	}
	var old *unstructured.Unstructured
	if req.Operation == admissionv1.Update {
		// An update that renders as before (the controller's own writes
		// of its metadata among them: a shrink after a prune must stay
		// one) needs nothing new.
		if old, err = decodeObject(req.OldObject.Raw); err != nil || sameRenderRequest(old, obj) {
			return nil, false
		}
	}
	parent, bundle, _ := m.rv.parent(ctx, obj)
	// A suspended parent is written nothing, its metadata included.
	if parent == nil || parent.ParentSpec().Suspend {
		return nil, false
	}
	planned, _ := m.rv.plan(ctx, parent, bundle, old)
	if planned == nil {
		return nil, false
	}
	return withMetadata(obj, parent, planned, m.version, req.Operation == admissionv1.Create)
}

// withMetadata returns obj with the ApplySet metadata of parent (obj as a
// applyset.Parent) for planned: what the controller's widen writes, the
// annotations naming what obj's name ∪ what planned holds; finalizer adds
// stencil's finalizer. It reports whether anything changed.
func withMetadata(obj *unstructured.Unstructured, parent applyset.Parent, planned *plan.Plan, version string, finalizer bool) (*unstructured.Unstructured, bool) {
	out := obj.DeepCopy()
	labels, annotations := maps.Clone(out.GetLabels()), maps.Clone(out.GetAnnotations())
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	gks, nss := applyset.ParseInventory(annotations).Union(planned.Inventory).Normalize(out.GetNamespace()).Annotations()
	labels[applyset.LabelApplySetID] = applyset.ParentID(parent)
	annotations[applyset.AnnotationTooling] = "stencil/" + version
	annotations[applyset.AnnotationGroupKinds] = gks
	annotations[applyset.AnnotationNamespaces] = nss
	changed := !maps.Equal(labels, out.GetLabels()) || !maps.Equal(annotations, out.GetAnnotations())
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	if finalizer && !slices.Contains(out.GetFinalizers(), v1alpha1.Finalizer) {
		out.SetFinalizers(append(out.GetFinalizers(), v1alpha1.Finalizer))
		changed = true
	}
	return out, changed
}
