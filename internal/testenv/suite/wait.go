package suite

import (
	"context"
	"fmt"
	"github.com/stencil-dev/stencil/internal/testenv"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// The Suite's waits: each polls the API server (Eventually, with its
// Timeout) until the state it names holds, and fails the test otherwise.

// Condition waits until the Composition's condition typ has status want
// at its generation, with one of reasons when any are given, and returns
// the Composition as it then was. Name every reason the test accepts:
// the first Stalled a loaded controller writes may be another's (a cache
// that has not yet seen the Bundle).
func (s *Suite) Condition(t testing.TB, ns, name, typ string, want metav1.ConditionStatus, reasons ...string) *v1alpha1.Composition {
	t.Helper()
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.WaitFor(t, s.Client, comp, 0, testenv.Condition{Type: typ, Status: want, Reasons: reasons})
	return comp
}

// CompositionWith waits until Composition ns/name has every condition of
// want at its generation (WaitFor) and returns it as it then was.
func (s *Suite) CompositionWith(t testing.TB, ns, name string, want ...testenv.Condition) *v1alpha1.Composition {
	t.Helper()
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	testenv.WaitFor(t, s.Client, comp, 0, want...)
	return comp
}

// Stalled waits until Composition ns/name is Stalled at its generation
// with reason ("" any) and a message holding every one of parts, and
// returns the Stalled condition.
func (s *Suite) Stalled(t testing.TB, ns, name, reason string, parts ...string) *metav1.Condition {
	t.Helper()
	want := testenv.Condition{Type: v1alpha1.ConditionStalled, Message: testenv.Says(parts...)}
	if reason != "" {
		want.Reasons = []string{reason}
	}
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return testenv.WaitFor(t, s.Client, comp, 0, want)
}

// BundleReady waits until the Bundle's Ready has status want at its
// generation, with reason unless it is "", and returns its condition: a
// Ready of another reason on the way (Establishing while the kind's CRD
// is made) is waited out.
func (s *Suite) BundleReady(t testing.TB, name string, want metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	c := testenv.Condition{Type: v1alpha1.ConditionReady, Status: want}
	if reason != "" {
		c.Reasons = []string{reason}
	}
	return *testenv.WaitFor(t, s.Client, &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: name}}, 0, c)
}

// Gone waits until obj no longer exists.
func (s *Suite) Gone(t testing.TB, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, 0, fmt.Sprintf("%T %s to be gone", obj, obj.GetName()), func() (bool, error) {
		err := s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), err
	})
}

// Exists waits until obj exists and reads it into obj.
func (s *Suite) Exists(t testing.TB, obj client.Object) {
	t.Helper()
	testenv.Eventually(t, 0, fmt.Sprintf("%T %s to exist", obj, obj.GetName()), func() (bool, error) {
		err := s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return err == nil, err
	})
}

// Absent reports whether obj does not exist (a read's error other than
// NotFound is returned): a condition for Eventually, or a check.
func (s *Suite) Absent(obj client.Object) (bool, error) {
	err := s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// StillAbsent checks that obj does not exist, and does not for a second,
// once its parent (or its Bundle) reported the refusal that keeps it from
// being made: what the refused pass would have written before its status
// is seen at once, and the second catches a write after it.
func (s *Suite) StillAbsent(t testing.TB, obj client.Object) {
	t.Helper()
	testenv.Consistently(t, time.Second, fmt.Sprintf("%T %s to stay absent", obj, obj.GetName()), func() (bool, error) {
		err := s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("it exists (or cannot be read: %v): the refused render was applied", err)
	})
}

// Established waits until the CRD named name is Established and returns
// it: from then on only a write changes its resourceVersion.
func (s *Suite) Established(t testing.TB, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	testenv.Eventually(t, 0, "CustomResourceDefinition "+name+" to be Established", func() (bool, error) {
		err := s.Get(context.Background(), client.ObjectKey{Name: name}, crd)
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, err
			}
		}
		return false, err
	})
	return crd
}
