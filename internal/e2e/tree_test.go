package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// testTree builds the tree of parent's namespace as Argo CD does (each
// object under the owners its ownerReferences name, by uid) and checks
// that the parent's members, and the ReplicaSets and Pods that
// kube-controller-manager made for its Deployments, are in it under the
// parent: Deployment → ReplicaSet → Pod, every one reached from the parent.
func testTree(t *testing.T, k client.Client, parent *unstructured.Unstructured) {
	ctx := context.Background()
	if err := k.Get(ctx, client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the members, ReplicaSets and Pods of "+parent.GetName()+" under it", func() (bool, error) {
		objs, err := namespaceObjects(ctx, k, parent.GetNamespace())
		if err != nil {
			return false, err
		}
		reached := reachedFrom(parent.GetUID(), objs)
		var deployments, replicaSets, pods int
		for _, o := range objs {
			switch o.kind {
			case "Deployment":
				if o.obj.GetLabels()["applyset.kubernetes.io/part-of"] == parent.GetLabels()["applyset.kubernetes.io/id"] {
					deployments++
					if !reached[o.obj.GetUID()] {
						return false, fmt.Errorf("Deployment %s is not under %s", o.obj.GetName(), parent.GetName())
					}
				}
			case "ReplicaSet":
				if reached[o.obj.GetUID()] {
					replicaSets++
				}
			case "Pod":
				if reached[o.obj.GetUID()] {
					pods++
				}
			}
		}
		return deployments > 0 && replicaSets > 0 && pods > 0,
			fmt.Errorf("under %s: %d Deployments, %d ReplicaSets, %d Pods", parent.GetName(), deployments, replicaSets, pods)
	})
}

type nsObject struct {
	kind string
	obj  client.Object
}

// namespaceObjects lists the Deployments, ReplicaSets, Pods, Services and
// ConfigMaps of ns.
func namespaceObjects(ctx context.Context, k client.Client, ns string) ([]nsObject, error) {
	var out []nsObject
	lists := map[string]client.ObjectList{"Deployment": &appsv1.DeploymentList{}, "ReplicaSet": &appsv1.ReplicaSetList{},
		"Pod": &corev1.PodList{}, "Service": &corev1.ServiceList{}, "ConfigMap": &corev1.ConfigMapList{}}
	for kind, list := range lists {
		if err := k.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		items, err := metaItems(list)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			out = append(out, nsObject{kind: kind, obj: o})
		}
	}
	return out, nil
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.ReplicaSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("list %T", list)
	}
	return out, nil
}

// reachedFrom walks objs from root by their owner references and returns
// the uids reached.
func reachedFrom(root types.UID, objs []nsObject) map[types.UID]bool {
	children := map[types.UID][]client.Object{}
	for _, o := range objs {
		for _, ref := range o.obj.GetOwnerReferences() {
			children[ref.UID] = append(children[ref.UID], o.obj)
		}
	}
	reached := map[types.UID]bool{}
	next := []types.UID{root}
	for len(next) > 0 {
		uid := next[0]
		next = next[1:]
		for _, c := range children[uid] {
			if !reached[c.GetUID()] {
				reached[c.GetUID()] = true
				next = append(next, c.GetUID())
			}
		}
	}
	return reached
}

// testGarbageCollectorKeepsOrphans deletes a Composition of the webapp
// Bundle whose deletionPolicy is Orphan, with
// kube-controller-manager's garbage collector running: its members stay.
// A ConfigMap the test makes with an owner reference to the Composition
// (a dependent stencil does not release) is the witness that the
// collector has acted on the Composition's absence: once it is gone, the
// members' turn came too, had they still named the Composition.
func testGarbageCollectorKeepsOrphans(t *testing.T, k client.Client) {
	ctx := context.Background()
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphans"},
		Spec: v1alpha1.CompositionSpec{Bundle: "webapp", DeletionPolicy: v1alpha1.DeletionPolicyOrphan}}
	if err := k.Create(ctx, comp); err != nil {
		t.Fatal(err)
	}
	ready(t, k, compositionObject(t, comp), 3*time.Minute)
	if err := k.Get(ctx, client.ObjectKeyFromObject(comp), comp); err != nil {
		t.Fatal(err)
	}
	var members []client.Object
	for _, m := range comp.Status.Members {
		if m.Namespace != comp.Namespace {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(m.Group + "/" + m.Version)
		if m.Group == "" {
			u.SetAPIVersion(m.Version)
		}
		u.SetKind(m.Kind)
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		if err := k.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		if !owns(u, comp.UID) {
			t.Errorf("%s %s carries no owner reference to the Composition", m.Kind, m.Name)
		}
		members = append(members, u)
	}
	if len(members) == 0 {
		t.Fatal("the Composition lists no member in its namespace")
	}
	witness := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphans-witness",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Name: comp.Name, UID: comp.UID}}}}
	if err := k.Create(ctx, witness); err != nil {
		t.Fatal(err)
	}
	if err := k.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the Composition and the witness to be gone", func() (bool, error) {
		errC := k.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
		errW := k.Get(ctx, client.ObjectKeyFromObject(witness), &corev1.ConfigMap{})
		return apierrors.IsNotFound(errC) && apierrors.IsNotFound(errW), fmt.Errorf("composition: %v, witness: %v", errC, errW)
	})
	for _, m := range members {
		u := m.(*unstructured.Unstructured)
		if err := k.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Errorf("orphaned %s %s: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		if owns(u, comp.UID) || u.GetDeletionTimestamp() != nil {
			t.Errorf("orphaned %s %s: still owned by the Composition, or being deleted: %+v", u.GetKind(), u.GetName(), u.GetOwnerReferences())
		}
		if err := k.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}

func owns(o client.Object, uid types.UID) bool {
	for _, r := range o.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// compositionObject is comp as the unstructured object ready waits on.
func compositionObject(t *testing.T, comp *v1alpha1.Composition) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Composition"))
	u.SetNamespace(comp.Namespace)
	u.SetName(comp.Name)
	return u
}
