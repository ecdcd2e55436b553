package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/templates/notes"
	"github.com/stencil-dev/stencil/templates/observed"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// Plan is what one render of a Composition asks to be applied: the objects
// in apply order, each placed in its namespace and labelled as a member of
// the Composition's ApplySet. `stencil render` prints exactly these objects.
type Plan struct {
	// ID is the ApplySet id of the Composition.
	ID string
	// Objects are the members in apply order.
	Objects []*unstructured.Unstructured
	// BundleRevision is the revision of the bundle rendered.
	BundleRevision string
	// ValuesMigrations names the bundle's values migrations the render
	// applied to the Composition's values (templates.ValuesMigrations):
	// nil when they were rendered as they are.
	ValuesMigrations []string
	// Notes is what the bundle's templates/NOTES.txt printed
	// (templates.Input.Notes): the parent's status.notes records it
	// bounded (StatusNotes), `stencil render --notes` prints it whole.
	Notes templates.Notes

	Inventory applyset.Inventory
	// CRDs are the CustomResourceDefinitions of the chart's crds/
	// folders (chartCRDs): applied first, created when absent (or, under
	// spec.crds CreateReplace, updated), never members of the set.
	CRDs []*unstructured.Unstructured
	// ReplaceCRDs: CRDs that exist are updated to the chart's (spec.crds
	// CreateReplace), not left as they are.
	ReplaceCRDs bool
	// Held are the objects the render held back (stencil.dev/wait-for):
	// neither applied nor pruned (see HoldsBack).
	Held []observed.HeldObject
	// Adopt are the kinds the rendered Bundle may adopt (its
	// spec.permissions.adopt, within its Bundle's current one for a
	// revision: templates.Bundle.Permissions).
	Adopt []v1alpha1.GroupKind
}

// StatusNotes is what the parent's status.notes records of p's notes:
// at most notes.MaxStatusBytes, and never the text of a render that
// looked up, observed or generated anything (notes.Status).
func (p *Plan) StatusNotes() string { return notes.Status(p.Notes) }

// RefusedError reports a rendered object that the Bundle's permissions do
// not allow (a cluster-scoped kind or another namespace), or a
// CustomResourceDefinition that would define a kind the cluster already
// serves otherwise (Conflict; see APIs). It is a user error: nothing of
// the Composition is applied or pruned until the input changes.
type RefusedError struct {
	// Object names the refused object as Kind/namespace/name.
	Object string
	// Reason says what was outside the bundle's permissions, or which kind
	// the CustomResourceDefinition would shadow.
	Reason string
	// Conflict is true for a CustomResourceDefinition refused because the
	// kind it defines is served otherwise (ConditionReason KindConflict).
	Conflict bool
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused %s: %s", e.Object, e.Reason)
}

// Renderer renders a bundle for one Composition. The controller and the
// CLI use a sandbox.Pool, which bounds every render's time and memory in a
// worker process; a *templates.RenderError is the bundle's or the values'
// fault, any other error may be retried.
type Renderer interface {
	Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error)
}

// LiveComposition is what the API server holds of a Composition that its
// render reads besides the Composition's spec, labels and annotations:
// its UID and whether its ApplySet records members.
type LiveComposition struct {
	// UID is the Composition's UID.
	UID types.UID
	// Installed is .Release.IsUpgrade: the controller's record of the
	// Composition's ApplySet (status.inventory, see applyset.Recorded)
	// names members. A pass records a rendered group-kind there with its
	// status, once it has begun to apply (and drops it once no member of
	// that kind is left), so Installed says that stencil has applied, or
	// begun to apply, objects of this Composition. It turns true after
	// the first pass that applies anything and false again only when the
	// set is emptied. The contains-group-kinds annotation, a copy of the
	// record for kubectl, plays no part.
	Installed bool
}

// Live reads a LiveComposition from the Composition as the API server
// holds it (a GET, not a possibly stale cache): Installed from the
// controller's own record of its set (applyset.Recorded:
// status.inventory, never the ApplySet annotations, which anyone who may
// update the Composition may edit unchecked). The controller, which reads
// the same record live before it renders, applies the same rule
// (Installed); `stencil render` and `stencil diff` call Live on the live
// Composition of the same name, the admission webhook on the parent as
// its request holds it.
func Live(comp applyset.Parent) *LiveComposition {
	inv, _ := applyset.Recorded(comp)
	return &LiveComposition{UID: comp.GetUID(), Installed: Installed(inv)}
}

// Installed is the rule of LiveComposition.Installed: inv records members.
func Installed(inv applyset.Inventory) bool { return len(inv.GroupKinds) > 0 }

// writtenByTools are the labels and annotations that tools write on a
// Composition about the Composition itself: the ApplySet metadata stencil
// keeps on its parent, and the copy of the object kubectl's client-side
// apply keeps. Templates never see them: they are not part of what the
// Composition asks for, a Composition read from a file does not have them,
// and they change under the controller's own writes.
var writtenByTools = map[string]bool{
	applyset.LabelApplySetID:                           true,
	applyset.AnnotationTooling:                         true,
	applyset.AnnotationGroupKinds:                      true,
	applyset.AnnotationNamespaces:                      true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// userMetadata returns a copy of m without the keys tools write: never
// nil, so {{ toYaml .Composition.Labels }} prints {} for a Composition
// without labels, wherever it was read from.
func userMetadata(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !writtenByTools[k] {
			out[k] = v
		}
	}
	return out
}

// inputGroupKind is the group-kind of the parent a render is for.
func inputGroupKind(c templates.CompositionInfo) schema.GroupKind {
	if c.Kind == "" {
		return applyset.CompositionGroupKind
	}
	return schema.FromAPIVersionAndKind(c.APIVersion, c.Kind).GroupKind()
}

// RenderInput is the one function that builds what a Composition gives its
// bundle's templates, for the controller and for `stencil render`,
// `stencil diff` and `stencil bundle lint` alike, so what they show is
// what the controller applies:
//
//   - .Values, .Composition.Name and Namespace, Labels and Annotations
//     come from comp (a file, or the controller's cache), without the
//     labels and annotations tools write (writtenByTools);
//   - .Composition.UID and .Release.IsUpgrade come from live, the
//     Composition as the API server holds it (see LiveComposition); with
//     no live Composition (it does not exist yet, or there is no
//     cluster) the UID is empty and .Release.IsInstall is true, whatever
//     uid or status comp carries;
//   - .Capabilities is caps: discovered from the cluster
//     (DiscoverCapabilities), or OfflineCapabilities without one.
func RenderInput(comp applyset.Parent, live *LiveComposition, caps *templates.Capabilities) templates.Input {
	in := templates.Input{
		Values: comp.ParentSpec().Values,
		Composition: templates.CompositionInfo{
			APIVersion:  comp.ParentGVK().GroupVersion().String(),
			Kind:        comp.ParentGVK().Kind,
			Name:        comp.GetName(),
			Namespace:   comp.GetNamespace(),
			Labels:      userMetadata(comp.GetLabels()),
			Annotations: userMetadata(comp.GetAnnotations()),
		},
		Capabilities: caps,
	}
	if live != nil {
		in.Composition.UID = string(live.UID)
		in.IsUpgrade = live.Installed
	}
	return in
}

// NewPlan renders a bundle with r for the Composition that in describes
// (see RenderInput) and prepares the result for apply: it places namespaced
// objects in the Composition's namespace, refuses what the bundle's
// permissions do not allow, refuses two objects that are one once placed
// (a ConfigMap with and without the Composition's namespace), adds the
// ApplySet part-of label and the parent's owner reference (see
// ownerReference), drops fields the server owns (status,
// managedFields, ...), and sorts the objects into apply order. apis says
// which kinds are namespaced; a CRD in the same render is believed only
// for a kind apis does not serve, and a CRD that would define a kind
// served otherwise is refused (see checkCRDs).
func NewPlan(ctx context.Context, r Renderer, b *templates.Bundle, in templates.Input, apis APIs) (*Plan, error) {
	if in.Observations == nil {
		in.Observations = &templates.Observations{} // for Held
	}
	if in.Notes == nil {
		in.Notes = &templates.Notes{}
	}
	objs, err := r.Render(ctx, b, in)
	if err != nil {
		return nil, err
	}
	objs = FilterHooks(objs) // Helm test hooks and hook points stencil does not run are never applied
	namespace := in.Composition.Namespace
	p := &Plan{
		ID:             applyset.ID(in.Composition.Name, namespace, inputGroupKind(in.Composition)),
		BundleRevision: b.Revision(),
		Held:           in.Observations.Held,
		Notes:          *in.Notes,
	}
	// The render merged the same values: the merge is remembered.
	if p.ValuesMigrations, err = templates.ValuesMigrations(b, in.Values); err != nil {
		return nil, err
	}
	if err := checkCRDs(ctx, objs, apis, p.ID); err != nil {
		return nil, err
	}
	if p.CRDs, err = chartCRDs(ctx, b, in, objs, apis); err != nil {
		return nil, err
	}
	p.ReplaceCRDs = b.CRDPolicy() == v1alpha1.CRDsCreateReplace
	crdScopes := renderedCRDScopes(append(slices.Clone(p.CRDs), objs...))
	perms := b.Permissions()
	p.Adopt = perms.Adopt
	placed := make(map[string]string, len(objs)) // object key → its namespace as rendered
	owner := OwnerReference(in.Composition)
	for _, u := range objs {
		namespaced, err := isNamespaced(u, apis, crdScopes)
		if err != nil {
			return nil, err
		}
		rendered := u.GetNamespace()
		if err := place(u, namespaced, namespace, perms); err != nil {
			return nil, err
		}
		// Two objects that only differ before placement (one names the
		// Composition's namespace, one names none; or two namespaces, of
		// a kind the cluster serves cluster-scoped) are one object:
		// applied twice, they would flip between two versions on every
		// pass. The render caught those of kinds whose scope it knew
		// (built in, in .Capabilities.ClusterScopedKinds, or declared by a
		// CRD of the render), naming both templates; these are of kinds
		// whose scope it did not know (capabilities that lag the cluster).
		key := ObjectKey(u)
		if first, ok := placed[key]; ok {
			return nil, duplicate(u, first, rendered)
		}
		placed[key] = rendered
		sanitize(u)
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[applyset.LabelPartOf] = p.ID
		u.SetLabels(labels)
		ownerReference(u, owner, namespace)
		p.Objects = append(p.Objects, u)
		p.Inventory.GroupKinds = append(p.Inventory.GroupKinds, u.GroupVersionKind().GroupKind())
		p.Inventory.Namespaces = append(p.Inventory.Namespaces, u.GetNamespace())
	}
	p.Inventory = p.Inventory.Normalize(namespace)
	SortForApply(p.Objects)
	return p, nil
}

// duplicate is the error of u rendered twice, once in namespace a and
// once in b (as rendered, "" for none).
func duplicate(u *unstructured.Unstructured, a, b string) error {
	how := " (once with its namespace, once without)"
	if a != "" && b != "" {
		how = fmt.Sprintf(" (in namespaces %q and %q of a cluster-scoped kind)", a, b)
	}
	return &templates.RenderError{Msg: fmt.Sprintf("%s is rendered twice%s", applyset.Ref(u), how)}
}

// ObjectKey identifies an object by group, kind, namespace and name.
func ObjectKey(u *unstructured.Unstructured) string {
	gvk := u.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + u.GetNamespace() + "/" + u.GetName()
}

// place puts a namespaced object in the Composition's namespace unless it
// names another one, and refuses what the bundle's permissions do not allow.
func place(u *unstructured.Unstructured, namespaced bool, namespace string, perms v1alpha1.BundlePermissions) error {
	gk := u.GroupVersionKind().GroupKind()
	if !namespaced {
		u.SetNamespace("")
		if !slices.ContainsFunc(perms.ClusterScoped, func(p v1alpha1.GroupKind) bool {
			return p.Group == gk.Group && (p.Kind == gk.Kind || p.Kind == "*")
		}) {
			return &RefusedError{Object: gk.Kind + "/" + u.GetName(),
				Reason: fmt.Sprintf("%s is cluster-scoped and the bundle's spec.permissions.clusterScoped does not allow it", applyset.FormatGroupKind(gk))}
		}
		return nil
	}
	switch ns := u.GetNamespace(); {
	case ns == "":
		u.SetNamespace(namespace)
	case ns != namespace && !slices.Contains(perms.Namespaces, ns) && !slices.Contains(perms.Namespaces, "*"):
		return &RefusedError{Object: gk.Kind + "/" + ns + "/" + u.GetName(),
			Reason: fmt.Sprintf("namespace %q is not the Composition's (%q) and the bundle's spec.permissions.Namespaces does not allow it", ns, namespace)}
	}
	return nil
}

// sanitize drops what the server owns, so an apply never claims it:
// status, managedFields, resourceVersion, uid, a null creationTimestamp.
func sanitize(u *unstructured.Unstructured) {
	delete(u.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
}
