package reconcile_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// ownedFiles render, for Composition NAME: ConfigMaps NAME-a and NAME-b;
// NAME-kept (helm.sh/resource-policy: keep) and NAME-pinned
// (stencil.dev/prune: disabled), which stencil never deletes; and
// NAME-adopted, which the test makes first, controlled by another owner.
func ownedFiles() map[string]string {
	cm := func(suffix, annotations string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Composition.Name }}-%s\n%sdata:\n  k: v\n", suffix, annotations)
	}
	return map[string]string{
		"templates/a.yaml":       cm("a", ""),
		"templates/b.yaml":       cm("b", ""),
		"templates/kept.yaml":    cm("kept", "  annotations:\n    helm.sh/resource-policy: keep\n"),
		"templates/pinned.yaml":  cm("pinned", "  annotations:\n    stencil.dev/prune: disabled\n"),
		"templates/adopted.yaml": cm("adopted", ""),
	}
}

// referencesTo returns obj's owner references to uid.
func referencesTo(obj client.Object, uid types.UID) []metav1.OwnerReference {
	return slices.DeleteFunc(slices.Clone(obj.GetOwnerReferences()), func(o metav1.OwnerReference) bool { return o.UID != uid })
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// ownedSet makes the set of ownedFiles for Composition web of a new
// namespace, with policy, its NAME-adopted made first (consenting, and
// controlled by ConfigMap boss), and waits until it is Ready with every
// reference in place. It returns the namespace and the Composition.
func ownedSet(t *testing.T, policy v1alpha1.DeletionPolicy) (string, *v1alpha1.Composition, *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	boss := configMap(ns, "boss")
	mustCreate(t, boss)
	adopted := configMap(ns, "web-adopted")
	adopted.Annotations = map[string]string{applyset.AnnotationAdopt: "compositions.stencil.dev/" + ns + "/web"}
	adopted.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: boss.UID, Controller: new(true)}}
	mustCreate(t, adopted)
	b := bundle(t, "owners-"+ns, ownedFiles())
	comp := composition(ns, "web", b.Name, `{}`)
	comp.Spec.DeletionPolicy = policy
	mustCreate(t, comp)
	comp = condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	eventually(t, "every member's owner reference", func() (bool, error) {
		for _, n := range []string{"a", "b", "adopted"} {
			cm := configMap(ns, "web-"+n)
			if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || len(referencesTo(cm, comp.UID)) == 0 {
				return false, err
			}
		}
		return true, nil
	})
	return ns, comp, boss
}

// TestOwnerReferences: members in the parent's namespace carry an owner
// reference to it, the controller one unless another owner controls the
// member already, never blocking the owner's deletion; members stencil
// keeps from deletion carry none. The tree Argo CD builds from owner
// references reaches every other member from the Composition.
func TestOwnerReferences(t *testing.T) {
	ctx := context.Background()
	ns, comp, boss := ownedSet(t, v1alpha1.DeletionPolicyDelete)
	want := metav1.OwnerReference{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Name: "web", UID: comp.UID}
	for _, n := range []string{"a", "b", "adopted", "kept", "pinned"} {
		cm := configMap(ns, "web-"+n)
		if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		refs := referencesTo(cm, comp.UID)
		switch n {
		case "kept", "pinned":
			if len(refs) != 0 {
				t.Errorf("%s (never deleted by stencil) carries %+v, want no reference to the Composition", cm.Name, refs)
			}
			continue
		case "adopted":
			if got := referencesTo(cm, boss.UID); len(got) != 1 || got[0].Controller == nil || !*got[0].Controller {
				t.Errorf("%s: boss's controller reference = %+v, want it kept", cm.Name, got)
			}
			want.Controller = nil
		default:
			want.Controller = new(true)
		}
		if len(refs) != 1 || refs[0].APIVersion != want.APIVersion || refs[0].Kind != want.Kind || refs[0].Name != want.Name ||
			(refs[0].Controller == nil) != (want.Controller == nil) || (refs[0].Controller != nil && !*refs[0].Controller) || refs[0].BlockOwnerDeletion != nil {
			t.Errorf("%s: references to the Composition = %+v, want one %+v with no blockOwnerDeletion", cm.Name, refs, want)
		}
	}
	// The tree, as Argo CD builds it: children by owner reference uid.
	var list corev1.ConfigMapList
	if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	reached := treeOf(comp.UID, objs)
	for _, m := range comp.Status.Members {
		if id := m.Name; id != "web-kept" && id != "web-pinned" && !reached[id] {
			t.Errorf("member %s/%s is not in the tree under the Composition (reached %v)", m.Kind, m.Name, reached)
		}
	}
}

// treeOf walks objs from root by owner references, as Argo CD's resource
// tree does, and returns the names reached.
func treeOf(root types.UID, objs []client.Object) map[string]bool {
	children := map[types.UID][]client.Object{}
	for _, o := range objs {
		for _, ref := range o.GetOwnerReferences() {
			children[ref.UID] = append(children[ref.UID], o)
		}
	}
	reached := map[string]bool{}
	next := []types.UID{root}
	for len(next) > 0 {
		uid := next[0]
		next = next[1:]
		for _, c := range children[uid] {
			if !reached[c.GetName()] {
				reached[c.GetName()] = true
				next = append(next, c.GetUID())
			}
		}
	}
	return reached
}

// TestOwnerReferencesOnDeletion: whatever stencil leaves in place when a
// Composition goes carries no reference to it any more, so Kubernetes'
// garbage collector (absent from envtest, so nothing but stencil takes a
// reference off here) finds nothing of the set to delete once the
// finalizer is dropped: with Orphan every member; with Delete the members
// kept (helm.sh/resource-policy: keep, stencil.dev/prune: disabled),
// while stencil deletes the rest; a suspended Composition's members,
// left as they are, labelled.
func TestOwnerReferencesOnDeletion(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		policy  v1alpha1.DeletionPolicy
		suspend bool
		gone    []string // deleted by stencil
		labeled []string // left in place still labelled part of the set
	}{
		{name: "Orphan", policy: v1alpha1.DeletionPolicyOrphan, labeled: []string{"pinned"}},
		{name: "Delete", policy: v1alpha1.DeletionPolicyDelete, gone: []string{"a", "b", "adopted"}, labeled: []string{"pinned"}},
		{name: "Suspended", policy: v1alpha1.DeletionPolicyDelete, suspend: true, labeled: []string{"a", "b", "adopted", "pinned", "kept"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, comp, boss := ownedSet(t, tc.policy)
			if tc.suspend {
				update(t, comp, func(c *v1alpha1.Composition) { c.Spec.Suspend = true })
				condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended)
			}
			if err := k.Delete(ctx, comp); err != nil {
				t.Fatal(err)
			}
			gone(t, comp)
			for _, n := range []string{"a", "b", "adopted", "kept", "pinned"} {
				cm := configMap(ns, "web-"+n)
				err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm)
				if slices.Contains(tc.gone, n) {
					if !apierrors.IsNotFound(err) {
						gone(t, cm) // deleted by stencil: it may still be going
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s, which stencil leaves in place: %v", cm.Name, err)
				}
				if refs := referencesTo(cm, comp.UID); len(refs) != 0 {
					t.Errorf("%s is left in place still referring to the Composition, for the garbage collector to delete: %+v", cm.Name, refs)
				}
				if _, ok := cm.Labels[applyset.LabelPartOf]; ok != slices.Contains(tc.labeled, n) {
					t.Errorf("%s: labelled part of the set = %v, want %v", cm.Name, ok, !ok)
				}
				if n == "adopted" && len(referencesTo(cm, boss.UID)) != 1 {
					t.Errorf("%s lost its other owner's reference: %+v", cm.Name, cm.OwnerReferences)
				}
			}
		})
	}
}

// TestOwnerReferencesForExistingSets: a set whose members carry no owner
// reference (as an earlier stencil left them) gains them in one apply per
// member, and then costs no write again.
func TestOwnerReferencesForExistingSets(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	files := ownedFiles()
	delete(files, "templates/adopted.yaml")
	b := bundle(t, "existing-"+ns, files)
	mustCreate(t, composition(ns, "web", b.Name, `{}`))
	comp := condition(t, ns, "web", v1alpha1.ConditionReady, metav1.ConditionTrue)
	owned := []string{"web-a", "web-b"}
	eventually(t, "owner references", func() (bool, error) {
		for _, n := range owned {
			cm := configMap(ns, n)
			if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || len(referencesTo(cm, comp.UID)) == 0 {
				return false, err
			}
		}
		return true, nil
	})
	// While the controller is down, the references go (another writer
	// removes them: stencil's managed fields no longer hold them, as an
	// earlier stencil's never did); the restarted controller's first pass
	// puts them back.
	restartController(t, func() {
		for _, n := range owned {
			patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/ownerReferences"}]`))
			if err := k.Patch(ctx, configMap(ns, n), patch); err != nil {
				t.Fatal(err)
			}
		}
	})
	eventually(t, "owner references again", func() (bool, error) {
		for _, n := range owned {
			cm := configMap(ns, n)
			if err := k.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil || len(referencesTo(cm, comp.UID)) != 1 {
				return false, err
			}
		}
		return true, nil
	})
	controller.Settle(t, ns)
	applies := map[string]int{}
	for _, w := range writesIn(controller, testenv.Mark{}, ns) {
		if strings.HasPrefix(w, "PATCH ") && strings.Contains(w, "/configmaps/") {
			for _, n := range append(owned, "web-kept", "web-pinned") {
				if strings.Contains(w, "/configmaps/"+n+"?") || strings.HasSuffix(strings.Fields(w)[1], "/configmaps/"+n) {
					applies[n]++
				}
			}
		}
	}
	if applies["web-a"] != 1 || applies["web-b"] != 1 || applies["web-kept"]+applies["web-pinned"] != 0 {
		t.Errorf("applies since the restart = %v, want one for each of %v and none for the others", applies, owned)
	}
	before := controller.Mark()
	env.TouchAndPass(t, controller, ns, "web", configMap(ns, "web-a"))
	if writes := writesIn(controller, before, ns); len(writes) != 0 {
		t.Errorf("a pass over the set with its references made %d writes, want 0: %v", len(writes), writes)
	}
}
