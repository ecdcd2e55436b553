package suite

import (
	"context"
	"github.com/stencil-dev/stencil/internal/testenv"
	"slices"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// The Suite's reads and writes of the objects tests make, as the
// cluster admin; each fails the test on an error.

// Key is the key of object ns/name.
func Key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// MustCreate creates obj.
func (s *Suite) MustCreate(t testing.TB, obj client.Object) {
	t.Helper()
	if err := s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// GetComposition reads Composition ns/name.
func (s *Suite) GetComposition(t testing.TB, ns, name string) *v1alpha1.Composition {
	t.Helper()
	c := &v1alpha1.Composition{}
	if err := s.Get(context.Background(), Key(ns, name), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Bundle creates a cluster-scoped Bundle name of files, changed by
// mutate, and deletes it when the test ends. Name it after the test (its
// namespace): Bundles are cluster-scoped.
func (s *Suite) Bundle(t testing.TB, name string, files map[string]string, mutate ...func(*v1alpha1.BundleSpec)) *v1alpha1.Bundle {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.BundleSpec{Files: files}}
	for _, m := range mutate {
		m(&b.Spec)
	}
	s.MustCreate(t, b)
	t.Cleanup(func() { _ = s.Delete(context.Background(), b) })
	return b
}

// Composition is Composition ns/name of bundle with values (JSON, "" for
// none), to create.
func Composition(ns, name, bundle, values string) *v1alpha1.Composition {
	c := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.CompositionSpec{Bundle: bundle},
	}
	if values != "" {
		c.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	return c
}

// Retry reads obj and calls write, again on a conflict (Retry): for a
// test's read-then-update of an object the controller also writes.
func (s *Suite) Retry(ctx context.Context, obj client.Object, write func() error) error {
	return testenv.Retry(ctx, s.Client, obj, write)
}

// UpdateComposition re-reads the Composition, changes it and writes it
// back, again on a conflict (Update).
func (s *Suite) UpdateComposition(t testing.TB, c *v1alpha1.Composition, change func(*v1alpha1.Composition)) {
	t.Helper()
	testenv.Update(t, s.Client, c, func() { change(c) })
}

// UpdateBundle changes the spec of Bundle name and writes it, again on a
// conflict: the controller writes the Bundle too (its finalizer, and its
// status, which moves its resourceVersion).
func (s *Suite) UpdateBundle(t testing.TB, name string, change func(*v1alpha1.BundleSpec)) {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}
	testenv.Update(t, s.Client, b, func() { change(&b.Spec) })
}

// MergePatch merge-patches the object u names (its kind, namespace and
// name) with patch, under the field manager named by manager ("" the
// client's default).
func (s *Suite) MergePatch(t testing.TB, u *unstructured.Unstructured, patch, manager string) {
	t.Helper()
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(u.GroupVersionKind())
	target.SetNamespace(u.GetNamespace())
	target.SetName(u.GetName())
	if err := s.Patch(context.Background(), target, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatalf("patch %s %s with %s: %v", u.GetKind(), u.GetName(), patch, err)
	}
}

// Events lists the events of namespace ns with the given reason.
func (s *Suite) Events(t testing.TB, ns, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(e eventsv1.Event) bool { return e.Reason != reason })
}

// MustYAML decodes the object manifest holds.
func MustYAML(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// CRDObject is the CustomResourceDefinition name, for reads.
func CRDObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	return u
}
