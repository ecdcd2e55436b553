package testenv

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Timeout is how long the waits of this file wait when given no timeout:
// long enough for several passes of a controller on a 2-core machine whose
// cores another process keeps busy (make test-stress runs the suites so),
// and short enough that a test waiting for what never comes fails within
// the package's time limit. A passing test waits only as long as the state
// takes to come: a long timeout costs nothing until something is wrong.
const Timeout = 2 * time.Minute

// poll is how often the waits read the cluster again.
const poll = 100 * time.Millisecond

// Eventually polls cond until it returns true, and fails t with what and
// cond's last error once timeout (Timeout when 0) has passed. cond's error
// is not fatal: it says why the state is not there yet, for the failure's
// message. Wait for the state a test asserts, never for the first state
// seen: a controller under load may pass through others on its way.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	timeout = orDefault(timeout)
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last: %v)", timeout, what, last)
	}
}

// Consistently checks that cond holds for d, failing t at the first time
// it does not.
func Consistently(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(poll) {
		ok, err := cond()
		if err != nil || !ok {
			t.Fatalf("%s stopped holding (err %v)", what, err)
		}
		if !time.Now().Before(end) {
			return
		}
	}
}

// Status is what a stencil status (a Composition's, a published kind's
// instance's, a Bundle's) says: its conditions and the generation they
// were written for.
type Status struct {
	// ObservedGeneration is status.observedGeneration.
	ObservedGeneration int64
	// Generation is metadata.generation.
	Generation int64
	// Conditions are status.conditions.
	Conditions []metav1.Condition
}

// StatusOf reads obj's status, whatever its Go type: a typed stencil
// object or an unstructured instance of a published kind.
func StatusOf(obj client.Object) (Status, error) {
	content, ok := obj.(runtime.Unstructured)
	var m map[string]any
	if ok {
		m = content.UnstructuredContent()
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return Status{}, err
		}
	}
	s := Status{Generation: obj.GetGeneration()}
	s.ObservedGeneration, _, _ = unstructured.NestedInt64(m, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(m, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(cm, &cond); err != nil {
			return Status{}, fmt.Errorf("status.conditions: %w", err)
		}
		s.Conditions = append(s.Conditions, cond)
	}
	return s, nil
}

// Find returns the condition of type typ, or nil.
func (s Status) Find(typ string) *metav1.Condition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == typ {
			return &s.Conditions[i]
		}
	}
	return nil
}

// Current reports whether the status was written for the object's
// generation: the status of a spec the controller has not yet seen says
// nothing about it.
func (s Status) Current() bool {
	return s.ObservedGeneration == s.Generation
}

// currentFor reports whether condition c was written for the object's
// generation: by its own observedGeneration when it has one (a suspended
// parent's Ready is written for its generation while
// status.observedGeneration stays at the last one reconciled, as kstatus
// wants), else by the status's.
func (s Status) currentFor(c *metav1.Condition) bool {
	if c.ObservedGeneration != 0 {
		return c.ObservedGeneration == s.Generation
	}
	return s.Current()
}

// Condition is a condition a wait expects.
type Condition struct {
	// Type is the condition's type (Ready, Reconciling, Stalled...).
	Type string
	// Status is the status wanted; "" is True.
	Status metav1.ConditionStatus
	// Reasons are the reasons accepted, any one of them; none accepts
	// every reason. Where the code allows several outcomes (two members
	// feeding each other, either named first), list each.
	Reasons []string
	// Message, when set, must hold for the condition's message (a check
	// of what it names; accept every message the code may write).
	Message func(string) bool
}

// String names c in a wait's failure.
func (c Condition) String() string {
	s := c.Type + "=" + string(c.want())
	if len(c.Reasons) > 0 {
		s += " (" + strings.Join(c.Reasons, " or ") + ")"
	}
	return s
}

func (c Condition) want() metav1.ConditionStatus {
	if c.Status == "" {
		return metav1.ConditionTrue
	}
	return c.Status
}

// Holds reports whether s has c at the object's generation, with an error
// saying why not.
func (c Condition) Holds(s Status) (bool, error) {
	got := s.Find(c.Type)
	switch {
	case got == nil:
		return false, fmt.Errorf("no %s condition; conditions %s", c.Type, brief(s.Conditions))
	case !s.currentFor(got):
		return false, fmt.Errorf("%s of generation %d (status of %d), the object is at %d; conditions %s", c.Type, got.ObservedGeneration, s.ObservedGeneration, s.Generation, brief(s.Conditions))
	case got.Status != c.want():
		return false, fmt.Errorf("%s=%s %s: %s", c.Type, got.Status, got.Reason, got.Message)
	case len(c.Reasons) > 0 && !slices.Contains(c.Reasons, got.Reason):
		return false, fmt.Errorf("%s=%s with reason %s: %s", c.Type, got.Status, got.Reason, got.Message)
	case c.Message != nil && !c.Message(got.Message):
		return false, fmt.Errorf("%s=%s %s with message %q", c.Type, got.Status, got.Reason, got.Message)
	}
	return true, nil
}

// Says is a Condition's Message check: the message holds every one of
// parts.
func Says(parts ...string) func(string) bool {
	return func(m string) bool {
		for _, p := range parts {
			if !strings.Contains(m, p) {
				return false
			}
		}
		return true
	}
}

func brief(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// WaitFor waits until obj, read live through c, has every condition of
// want written for its generation (see Status.currentFor), and returns the first of them as it then was;
// obj holds the object as read then. timeout 0 is Timeout. A condition
// seen on the way with another status or reason is not the end: the wait
// goes on until the one asked for, so a test never takes a passing state
// (a Stalled of a cache that had not yet seen a Bundle) for the final one.
func WaitFor(t testing.TB, c client.Reader, obj client.Object, timeout time.Duration, want ...Condition) *metav1.Condition {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("WaitFor: no condition to wait for")
	}
	var names []string
	for _, w := range want {
		names = append(names, w.String())
	}
	var got *metav1.Condition
	Eventually(t, timeout, fmt.Sprintf("%s %s to have %s", kindOf(obj), client.ObjectKeyFromObject(obj), strings.Join(names, ", ")), func() (bool, error) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		s, err := StatusOf(obj)
		if err != nil {
			return false, err
		}
		for _, w := range want {
			if ok, err := w.Holds(s); !ok {
				return false, err
			}
		}
		got = s.Find(want[0].Type)
		return true, nil
	})
	return got
}

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", obj), "*")
}

// Retry reads obj live into itself and calls write, again while write's
// error is a conflict: the read-then-write of an object another actor
// (the controller, the API server's own controllers) writes too, which
// otherwise fails on a busy machine with "the object has been modified".
func Retry(ctx context.Context, c client.Reader, obj client.Object, write func() error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		return write()
	})
}

// Update changes obj as change says and writes it with opts, reading it
// again and changing it again on a conflict; it fails t on any other
// error. obj holds the object as written.
func Update(t testing.TB, c client.Client, obj client.Object, change func(), opts ...client.UpdateOption) {
	t.Helper()
	ctx := context.Background()
	if err := Retry(ctx, c, obj, func() error { change(); return c.Update(ctx, obj, opts...) }); err != nil {
		t.Fatalf("update %s %s: %v", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
}

// UpdateStatus is Update of obj's status subresource.
func UpdateStatus(t testing.TB, c client.Client, obj client.Object, change func(), opts ...client.SubResourceUpdateOption) {
	t.Helper()
	ctx := context.Background()
	if err := Retry(ctx, c, obj, func() error { change(); return c.Status().Update(ctx, obj, opts...) }); err != nil {
		t.Fatalf("update the status of %s %s: %v", kindOf(obj), client.ObjectKeyFromObject(obj), err)
	}
}

// AdmissionProbe is the name of the objects whose creates the waits for
// admission dry-run (WaitAdmitted, WaitCreatable, WaitKindChecked).
const AdmissionProbe = "admission-probe"

// Admitted returns nil once the API server admits a Composition of
// namespace ns with labels (a server-side dry run of its create, nothing
// stored), and the last refusal when ctx ends first. stencil's admission
// policy refuses the parents of a shard until its controller's parameters
// have reached the API server's informers, some time after the controller
// wrote them; a webhook entry fails closed until the controller serves it.
// A test that creates a parent before either would be refused.
func Admitted(ctx context.Context, c client.Client, ns string, labels map[string]string) error {
	probe := &v1alpha1.Composition{}
	probe.Namespace, probe.Name, probe.Labels, probe.Spec.Bundle = ns, AdmissionProbe, labels, AdmissionProbe
	return Creatable(ctx, c, probe)
}

// WaitAdmitted fails t unless the API server admits a Composition of
// namespace ns with labels within timeout (Timeout when 0), as Admitted:
// call it before creating the first parent of a shard, a namespace or a
// webhook configuration the test has just made ready.
func WaitAdmitted(t testing.TB, c client.Client, ns string, labels map[string]string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := withTimeout(timeout)
	defer cancel()
	if err := Admitted(ctx, c, ns, labels); err != nil {
		t.Fatalf("after %s: %v", orDefault(timeout), err)
	}
}

// orDefault is timeout, or Timeout when 0.
func orDefault(timeout time.Duration) time.Duration {
	if timeout == 0 {
		return Timeout
	}
	return timeout
}

// withTimeout is a context that ends after timeout (Timeout when 0).
func withTimeout(timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), orDefault(timeout))
}

// pollLast polls try until it returns nil or ctx ends, and then returns
// nil, or the last error try returned before ctx ended (the refusal, not
// the end of the wait a request met), joined with what.
func pollLast(ctx context.Context, what string, try func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		err := try(ctx)
		if err == nil {
			return true, nil
		}
		if ctx.Err() == nil {
			last = err
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", what, cmp.Or(last, err))
	}
	return nil
}
